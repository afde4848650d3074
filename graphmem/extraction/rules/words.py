"""English word lists and lookups the rules read: closed word classes, name parts, lemmas.

Built once per process: the lemma table and the noun and adjective lists come from
``spacy-lookups-data`` (no model download). A lemma table is enough to match "worked for" to the label
"works for", and its keys and values double as a list of common lowercase words, which tells a
sentence-initial "Painting" (a word) from "Tennessee" (a name).
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Final

from spacy.lang.en.stop_words import STOP_WORDS

PREPOSITIONS: Final = frozenset({
    "in", "at", "for", "to", "with", "from", "of", "on", "by", "about", "into", "under", "over", "near",
    "as", "after", "before", "during", "since", "until", "through", "across", "around", "between", "via",
    "against", "without", "within", "inside", "like", "than", "per", "toward", "towards", "upon", "behind",
})
CONJUNCTIONS: Final = frozenset({"and", "or", "but", "nor", "so", "yet", "because", "while", "although",
                                 "though", "if", "when", "whereas", "that", "which", "who", "whom", "whose"})
DETERMINERS: Final = frozenset({"the", "a", "an", "this", "that", "these", "those", "some", "any", "another",
                                "my", "your", "his", "her", "its", "our", "their", "each", "every", "no"})
POSSESSIVE_DETS: Final = frozenset({"my", "your", "his", "her", "its", "our", "their"})
POSSESSIVE_MARKS: Final = frozenset({"'s", "’s", "'", "’"})
FIRST_PERSON: Final = frozenset({"i", "me", "myself"})
LEAVE_FORMS: Final = {"left": "leave", "leave": "leave", "leaving": "leave", "quit": "quit", "quitting": "quit",
                      "traded": "trade", "swapped": "swap"}
"""Forms of leaving a place or a job ("traded Brussels for Namur"); a sentence-initial "Left"/"Quit" is
often parsed as an adjective or a noun, so its lemma is not "leave" (and a name must not start with it)."""
OTHER_PRONOUNS: Final = frozenset({"he", "she", "it", "they", "we", "you", "him", "them", "us", "this", "that",
                                   "these", "those", "who", "which", "there", "here", "one", "someone",
                                   "everyone", "everybody", "somebody", "nobody", "anyone"})
NEGATIONS: Final = frozenset({"not", "n't", "never", "no", "nt", "neither", "nor", "hardly"})
INTERJECTIONS: Final = frozenset({
    "hey", "hi", "hello", "wow", "oh", "ooh", "ah", "aw", "aww", "yeah", "yep", "yes", "no", "nope", "ok", "okay",
    "thanks", "thank", "congrats", "congratulations", "omg", "lol", "haha", "hah", "hmm", "um", "uh", "well",
    "sure", "great", "awesome", "cool", "nice", "sorry", "please", "dear", "bye", "cheers", "welcome", "wait",
    "gosh", "whoa", "yay", "woah", "btw", "tbh", "alright", "absolutely", "definitely", "totally", "anyway",
    "anyways", "oops", "huh", "ya", "yup", "morning", "evening", "night", "good", "amazing", "gonna", "wanna",
    "gotta", "kinda", "sorta", "lemme", "gon", "guys", "guess", "also", "just", "really", "exactly", "true",
})
PHATIC: Final = INTERJECTIONS | frozenset({
    "you", "your", "you're", "'re", "i", "i'm", "'m", "me", "we", "it", "that", "this", "is", "be", "am", "are",
    "how", "what", "can", "could", "may", "might", "do", "does", "shall", "would", "will", "'ll", "help",
    "assist", "today", "anything", "else", "something", "let", "know", "if", "need", "glad", "happy", "to",
    "for", "with", "there", "much", "very", "so", "a", "lot", "again", "all", "the", "thing", "no", "problem",
    "worries", "course", "of", "pleasure", "my", "here", "more", "have", "day", "nice", "see", "talk", "soon",
    "later", "take", "care", "got", "meet", "meeting", "chat", "chatting", "sharing", "share", "noted",
    "understood", "hear", "any", "questions", "other", "feel", "free", "ask", "'s", "s", "n't", "not", "doing",
    "going", "up", "sounds", "good", "fine",
    "saying", "asking", "helpful", "mind", "on", "now", "been", "was", "were", "bye", "goodbye", "hello", "hi",
})
"""Words a pleasantry is made of ("How can I help?", "You're welcome!", "Thanks a lot"): a memory made of
these alone (and speaker names) says nothing worth keeping."""
MONTHS: Final = frozenset({
    "january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
    "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov",
    "dec", "jan.", "feb.", "mar.", "apr.", "jun.", "jul.", "aug.", "sep.", "sept.", "oct.", "nov.", "dec.",
})
WEEKDAYS: Final = frozenset({"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
                             "mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri", "sat", "sun"})
NAME_CONNECTORS: Final = frozenset({"of", "de", "van", "von", "der", "den", "da", "di", "du", "la", "le", "del",
                                    "della", "des", "dos", "das", "y", "bin", "al", "for", "on", "upon", "am",
                                    "im", "zu", "&"})
NAME_SUFFIXES: Final = frozenset({"jr", "jr.", "sr", "sr.", "ii", "iii", "iv", "phd", "ph.d.", "md", "m.d."})
DEMONYMS: Final = frozenset({
    "american", "british", "english", "french", "german", "spanish", "italian", "chinese", "japanese", "korean",
    "indian", "african", "european", "asian", "australian", "canadian", "mexican", "brazilian", "russian",
    "swedish", "norwegian", "danish", "dutch", "irish", "scottish", "welsh", "portuguese", "greek", "turkish",
    "polish", "jewish", "christian", "catholic", "muslim", "islamic", "arab", "arabic", "latin", "hispanic",
    "african-american", "swiss", "austrian", "belgian", "finnish", "hungarian", "czech", "israeli", "iranian",
    "iraqi", "egyptian", "nigerian", "kenyan", "vietnamese", "thai", "filipino", "indonesian", "pakistani",
    "cuban", "argentine", "chilean", "colombian", "peruvian", "venezuelan", "ukrainian", "romanian",
    "bulgarian", "serbian", "croatian", "soviet", "roman", "byzantine", "ottoman", "persian", "anglican",
    "protestant", "lutheran", "baptist", "methodist", "orthodox", "republican", "democratic", "latino",
    "latina", "native", "western", "eastern", "northern", "southern", "nordic", "scandinavian", "celtic",
    "victorian", "medieval", "biblical", "buddhist", "hindu", "sikh", "mormon", "evangelical", "pentecostal",
    "puerto", "caribbean", "mediterranean", "balkan", "baltic", "slavic", "hawaiian", "texan", "californian",
    "parisian", "londoner"})
_COUNTRY_OF: Final = (
    "american:United_States british:United_Kingdom french:France german:Germany spanish:Spain italian:Italy "
    "chinese:China japanese:Japan korean:Korea indian:India australian:Australia canadian:Canada mexican:Mexico "
    "brazilian:Brazil russian:Russia swedish:Sweden norwegian:Norway danish:Denmark dutch:Netherlands "
    "irish:Ireland scottish:Scotland welsh:Wales portuguese:Portugal greek:Greece turkish:Turkey polish:Poland "
    "swiss:Switzerland austrian:Austria belgian:Belgium finnish:Finland hungarian:Hungary czech:Czech_Republic "
    "israeli:Israel iranian:Iran iraqi:Iraq egyptian:Egypt nigerian:Nigeria kenyan:Kenya vietnamese:Vietnam "
    "thai:Thailand filipino:Philippines indonesian:Indonesia pakistani:Pakistan cuban:Cuba argentine:Argentina "
    "argentinian:Argentina chilean:Chile colombian:Colombia peruvian:Peru venezuelan:Venezuela "
    "ukrainian:Ukraine romanian:Romania bulgarian:Bulgaria serbian:Serbia croatian:Croatia icelandic:Iceland "
    "jamaican:Jamaica haitian:Haiti ghanaian:Ghana ethiopian:Ethiopia moroccan:Morocco algerian:Algeria "
    "tunisian:Tunisia lebanese:Lebanon syrian:Syria saudi:Saudi_Arabia afghan:Afghanistan "
    "bangladeshi:Bangladesh nepalese:Nepal nepali:Nepal malaysian:Malaysia singaporean:Singapore "
    "taiwanese:Taiwan mongolian:Mongolia estonian:Estonia latvian:Latvia lithuanian:Lithuania slovak:Slovakia "
    "slovenian:Slovenia bosnian:Bosnia albanian:Albania armenian:Armenia guyanese:Guyana ecuadorian:Ecuador "
    "bolivian:Bolivia uruguayan:Uruguay paraguayan:Paraguay kazakh:Kazakhstan uzbek:Uzbekistan "
    "zimbabwean:Zimbabwe zambian:Zambia ugandan:Uganda tanzanian:Tanzania senegalese:Senegal sudanese:Sudan "
    "somali:Somalia cambodian:Cambodia burmese:Myanmar laotian:Laos belarusian:Belarus moldovan:Moldova "
    "cypriot:Cyprus maltese:Malta luxembourgish:Luxembourg qatari:Qatar kuwaiti:Kuwait omani:Oman "
    "yemeni:Yemen jordanian:Jordan libyan:Libya congolese:Congo angolan:Angola namibian:Namibia "
    "mozambican:Mozambique malagasy:Madagascar fijian:Fiji"
)
COUNTRY_OF_DEMONYM: Final = {d: c.replace("_", " ") for d, c in (x.split(":") for x in _COUNTRY_OF.split())}
"""Nationality adjective -> country: "a Mexican politician" mentions Mexico, so memories about Mexico
connect even when only one of them names the country."""
PERSON_TITLES: Final = frozenset({"mr", "mr.", "mrs", "mrs.", "ms", "ms.", "dr", "dr.", "prof", "prof.", "sir",
                                  "dame", "lady", "lord", "president", "king", "queen", "prince", "princess",
                                  "senator", "governor", "mayor", "pope", "uncle", "aunt", "grandma",
                                  "grandpa", "miss", "madam", "captain", "general", "judge", "coach", "rev", "rev.",
                                  "reverend"})
DIRECTION_WORDS: Final = frozenset({"north", "south", "east", "west", "new", "upper", "lower", "great", "greater",
                                    "central", "northern", "southern", "eastern", "western", "united", "old",
                                    "little", "big", "saint", "st.", "san", "santa", "los", "las", "el", "port",
                                    "fort", "mount", "lake", "cape", "isle", "la", "le"})
GENERIC_HEADS: Final = frozenset({
    "time", "times", "lot", "lots", "bit", "way", "ways", "thing", "things", "stuff", "one", "ones", "day", "days",
    "week", "weeks", "year", "years", "month", "months", "kind", "sort", "type", "couple", "few", "bunch", "part",
    "piece", "moment", "while", "chance", "idea", "feeling", "feelings", "fun", "blast", "look", "place", "people",
    "person", "everything", "something", "anything", "nothing", "much", "more", "most", "all", "both",
    "point", "sense", "reason", "same", "other", "others", "number", "amount", "end", "start", "rest", "side",
    "work", "job", "home", "life", "world", "family", "friends", "friend", "kids", "kid", "guys",
})

JOB_HEADS: Final = frozenset({
    "engineer", "developer", "designer", "manager", "nurse", "teacher", "doctor", "dentist", "lawyer", "accountant",
    "student", "scientist", "analyst", "consultant", "architect", "chef", "cook", "pilot", "driver", "writer",
    "editor", "researcher", "professor", "lecturer", "director", "officer", "assistant", "technician",
    "electrician", "plumber", "mechanic", "pharmacist", "therapist", "physician", "surgeon", "vet",
    "veterinarian", "programmer", "administrator", "specialist", "coordinator", "intern", "founder", "barista",
    "baker", "waiter", "waitress", "cashier", "clerk", "photographer", "artist", "musician", "journalist",
    "librarian", "paramedic", "firefighter", "farmer", "carpenter", "lead", "head", "executive", "recruiter",
    "tutor", "translator", "interpreter", "economist", "statistician", "psychologist", "counselor",
    "counsellor", "midwife", "optician", "physiotherapist", "radiologist", "secretary", "receptionist",
    "salesperson", "marketer", "strategist", "planner", "producer", "illustrator", "animator", "chemist",
    "biologist", "physicist", "mathematician", "postdoc", "candidate", "apprentice", "trainee", "partner",
    "owner", "president", "chair", "supervisor", "inspector", "agent", "broker", "banker", "trader",
    "auditor", "attorney", "paralegal", "judge", "detective", "soldier", "sergeant", "guard", "janitor",
    "gardener", "tailor", "butcher", "florist", "hairdresser", "stylist", "beautician", "dj", "gp", "pm",
    "ceo", "cto", "cfo", "coo", "vp", "sre", "swe", "ux", "ui", "coach", "curator", "principal", "chief",
    "counsel", "superintendent", "warden", "headteacher", "headmaster", "headmistress", "fellow", "associate",
    "controller", "buyer", "ranger", "adviser", "advisor", "instructor", "trainer", "dean", "registrar",
    "pastor", "priest", "nanny", "steward", "foreman", "clinician", "dietitian", "nutritionist",
    "commissioner", "actuary", "archivist", "conservator", "surveyor", "estimator", "dispatcher", "caretaker",
})
"""Last words of a job title ("product designer", "senior PM"): what makes "I'm a <words>" a job."""
JOB_SUFFIXES: Final = ("ologist", "iatrist", "ician", "ographer")
"""Endings of professions the list cannot hold ("neonatologist", "paediatrician", "videographer")."""
JOB_ACRONYMS: Final = frozenset({"pm", "ceo", "cto", "cfo", "coo", "vp", "svp", "evp", "gp", "sre", "swe", "phd",
                                 "hr", "qa", "ux", "ui", "md", "rn", "dj", "cpa"})
"""Capitalized job words that are not names ("a senior PM", "my GP")."""

PROJECT_HEADS: Final = frozenset({"migration", "rewrite", "redesign", "rollout", "overhaul", "refactor", "revamp",
                                  "upgrade", "replatforming", "rebuild"})
"""Lowercase words that make a name before them a piece of work: "the Atlas migration"."""
LEGAL_SUFFIXES: Final = frozenset({"inc", "inc.", "corp", "corp.", "corporation", "ltd", "ltd.", "llc", "l.l.c.",
                                    "gmbh", "plc", "co.", "s.a.", "ag", "sa", "bv", "b.v.", "pty", "limited",
                                    "incorporated", "llp", "lp", "s.p.a.", "oy", "ab", "nv", "n.v."})

EVALUATIVE: Final = frozenset({
    "great", "good", "nice", "awesome", "amazing", "huge", "big", "little", "small", "long", "short", "new", "old",
    "special", "real", "whole", "same", "other", "own", "best", "better", "bad", "hard", "tough", "fun", "cool",
    "lovely", "beautiful", "happy", "sad", "wonderful", "fantastic", "incredible", "perfect", "first", "last",
    "next", "few", "several", "many", "much", "more", "most", "such", "quite", "pretty", "super", "total", "true",
    "full", "high", "low", "right", "wrong", "sweet", "kind", "proud", "free", "busy", "quick", "quiet", "early",
    "late", "young", "main", "major", "favorite", "favourite", "tiny", "entire", "various", "different",
    "similar", "certain", "particular", "important", "positive", "negative", "strong", "deep", "warm", "cold",
    "hot", "safe", "close", "simple", "easy", "difficult", "fresh", "rough", "crazy", "wild", "brave", "hopeful",
    "powerful", "glad", "sure", "fine", "okay", "ok", "bright", "dark", "minor", "past",
    "future", "recent", "current", "daily", "weekly", "annual", "latest", "previous", "single", "double", "half",
    "lot", "bit", "top", "bottom", "front", "back", "side", "extra", "general", "usual", "regular",
    "normal", "typical", "common", "rare", "nearby", "local", "overall", "awful", "terrible", "horrible",
    "excellent", "brilliant", "gorgeous", "cute", "funny", "serious", "honest", "open", "ideal",
})


@dataclass(frozen=True)
class English:
    """The lemma table (lowercase form -> lemma), common lowercase words, and WordNet's lemma lists by part of
    speech (nouns and adjectives), used to spot noun compounds such as "support group"."""

    lemmas: dict[str, str]
    vocabulary: frozenset[str]
    nouns: frozenset[str] = frozenset()
    adjectives: frozenset[str] = frozenset()

    def lemma(self, lower: str) -> str:
        return self.lemmas.get(lower, lower)

    def is_common(self, lower: str) -> bool:
        return lower in self.vocabulary or lower in STOP_WORDS or lower in INTERJECTIONS


@cache
def english() -> English:
    """Read ``spacy-lookups-data``'s English lemma table once per process (~30 ms)."""
    import spacy_lookups_data  # type: ignore[import-untyped]

    path = Path(spacy_lookups_data.__file__).parent / "data" / "en_lemma_lookup.json.gz"
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        table: dict[str, str] = json.load(fh)
    lemmas = {k.lower(): v.lower() for k, v in table.items() if k == k.lower()}
    lemmas.update({"n't": "not", "n’t": "not", "does": "do"})  # "don't eat" is "does not eat" (not "doe")
    # the table has the straight-quote contractions only, and no "'re": "we're in Mérida now" is "we are"
    lemmas.update({"'re": "be", "’re": "be", "’m": "be", "’ve": "have", "’ll": "will", "’d": "would",
                   "’s": lemmas.get("'s", "have")})
    vocab = frozenset(w for w in (*lemmas, *lemmas.values()) if w.isalpha() and w == w.lower())
    with gzip.open(path.with_name("en_lemma_index.json.gz"), "rt", encoding="utf-8") as fh:
        index: dict[str, list[str]] = json.load(fh)
    return English(lemmas, vocab, frozenset(index.get("noun", ())), frozenset(index.get("adj", ())))
