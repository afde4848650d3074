"""Rule-based extractor: what graphmem uses when no LLM is configured.

Offline and deterministic: spaCy's ``en_core_web_sm`` (tags, dependency parse, lemmas; its
recognizer only for names nothing else types), the lookup lemmas of ``spacy-lookups-data``, the
ontology's labels and synonyms, and ``dateparser`` for time phrases. It has lower recall than an LLM
but the same output shape:

* memories (``memories``): the chunk's sentences, verbatim (very short ones are merged with a neighbour),
  typed episodic when a time phrase (``dates``) resolves against the reference time, procedural for rule
  or how-to sentences, semantic otherwise, and attributed to the speaker of "Speaker: text" lines;
* entities (``mentions`` finds them, ``entities`` registers them, ``classes`` types them): capitalized
  names, quoted titles, identifiers, known entities and speakers, typed only on evidence ("the city of
  Lyon", "Tennessee is a state", "Avery County", "Acme Inc."); also names inside names ("Tulsa" in
  "Philbrook Museum of Tulsa"), the country behind a nationality ("Mexican" -> Mexico) and, unless
  ``concepts=False``, lowercase noun compounds (``concepts``: "support group", "mental health");
* triples (``triples``, ``roles``, ``values``, over ``arguments``): "X <relation label or synonym> Y"
  inside a sentence, role nouns ("Maya's manager Tomás", "my sister Inês"), and datatype values (dates,
  ages, emails, job titles); where no words name it, ``pairs``: the one relation the ontology's domains
  and ranges admit between two typed things of a clause ("Dr. Okafor, the cardiologist at Royal
  Berkshire Hospital").

Search relies on entities shared between memories, so names are normalized the same way everywhere
and short forms ("Snow" after "Hank Snow", "Mel" for the speaker "Melanie") become aliases. What the
rules match is in ``words`` (English) and ``lexicon`` (the ontology); ``text`` tokenizes a chunk once.
``reading`` is the same extractor used by search to read a stored text, never written.
Importing this package does not import spaCy: ``RuleExtractor`` loads it on first use (without its
command line: :mod:`.spacy_import`).
"""

from .extractor import RuleExtractor
from .reading import StatementReader
from .state import Granularity

__all__ = ["Granularity", "RuleExtractor", "StatementReader"]
