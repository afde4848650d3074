"""Reading Turtle files: folders to files, parse errors to ``file:line``, local ``owl:imports``, fingerprint.

Folders are read one level deep (``*.ttl``, sorted), so ``shapes/tests/`` example data never leaks
into the shapes graph. ``owl:imports`` are followed only to files that exist locally: a ``file:``
IRI, a file in one of the given folders named like the IRI's last segment, or a file there that
declares the IRI as its ``owl:Ontology``. Nothing is fetched over the network; imports that resolve to
no file are recorded for ``graphmem ontology check`` to report.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

from rdflib import Graph, URIRef
from rdflib.namespace import OWL, RDF
from rdflib.plugins.parsers.notation3 import BadSyntax

from ..errors import OntologyError

_PREFIX = re.compile(r"^\s*(?:@prefix|PREFIX)\s+([A-Za-z_][\w.\-]*)?:\s*<([^>]*)>", re.IGNORECASE | re.MULTILINE)


def strip_comment(line: str) -> str:
    """The line without its ``#`` comment (a ``#`` inside an IRI or a string is not a comment)."""
    in_iri = False
    quote = ""
    i = 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif in_iri:
            in_iri = ch != ">"
        elif ch in "\"'":
            quote = ch
        elif ch == "<":
            in_iri = True
        elif ch == "#":
            return line[:i]
        i += 1
    return line


@dataclass(frozen=True)
class SourceFile:
    """One Turtle file as read from disk, kept so problems can be pointed at a line."""

    path: Path
    text: str
    prefixes: dict[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls, path: Path) -> SourceFile:
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise OntologyError(f"cannot read: {exc.strerror}", path=path) from None
        return cls.from_bytes(path, raw)

    @classmethod
    def from_bytes(cls, path: Path, raw: bytes) -> SourceFile:
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = raw[: exc.start].count(b"\n") + 1
            raise OntologyError(f"not UTF-8 (byte 0x{raw[exc.start]:02x})", path=path, line=line) from None
        prefixes = {m.group(1) or "": m.group(2) for m in _PREFIX.finditer(text)}
        return cls(path=path, text=text, prefixes=prefixes)

    @property
    def base_iri(self) -> str:
        return self.path.resolve().as_uri()

    def tokens(self, iri: str) -> list[str]:
        """The ways this file can spell ``iri``: ``<iri>`` and ``prefix:local`` for each matching prefix."""
        out = [f"<{iri}>"]
        for prefix, ns in self.prefixes.items():
            if ns and iri.startswith(ns) and len(iri) > len(ns):
                out.append(f"{prefix}:{iri[len(ns):]}")
        return out

    def _lines(self) -> list[str]:
        return [strip_comment(line) for line in self.text.splitlines()]

    def line_of(self, iri: str, *, after: str | None = None) -> int | None:
        """1-based line of the first mention of ``iri`` (optionally only on lines that also hold ``after``
        before it, e.g. the predicate of the statement)."""
        pats = [re.compile(r"(?<![\w:<])" + re.escape(t) + r"(?![\w\-])") for t in self.tokens(iri)]
        pre = [re.compile(r"(?<![\w:<])" + re.escape(t) + r"(?![\w\-])") for t in self.tokens(after)] if after else []
        for no, line in enumerate(self._lines(), 1):
            for pat in pats:
                m = pat.search(line)
                if m and (not pre or any((p := q.search(line)) and p.start() < m.start() for q in pre)):
                    return no
        return None

    def line_of_value(self, predicate: str, lexical: str) -> int | None:
        """1-based line where ``predicate`` is followed by the literal ``lexical`` (quoted or bare)."""
        preds = [re.compile(r"(?<![\w:<])" + re.escape(t) + r"(?![\w\-])") for t in self.tokens(predicate)]
        value = re.compile(r"""(?<![\w.+\-])["']?""" + re.escape(lexical) + r"""(?![\w.])""")
        first: int | None = None
        for no, line in enumerate(self._lines(), 1):
            for pat in preds:
                m = pat.search(line)
                if m:
                    first = first or no
                    if value.search(line, m.end()):
                        return no
        return first


def expand_paths(paths: Iterable[str | Path], *, what: str) -> list[Path]:
    """Files stay as given; folders become their ``*.ttl`` files (sorted, not recursive)."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw).expanduser()
        if p.is_dir():
            out.extend(sorted(f for f in p.glob("*.ttl") if f.is_file()))
        elif p.is_file():
            out.append(p)
        else:
            raise OntologyError(f"{what} path does not exist", path=p)
    seen: set[Path] = set()
    unique = []
    for p in out:
        key = p.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(p)
    return unique


def parse_into(graph: Graph, source: SourceFile) -> None:
    """Parse one Turtle file into ``graph``, turning rdflib's syntax error into ``file:line: reason``."""
    try:
        graph.parse(data=source.text, format="turtle", publicID=source.base_iri)
    except BadSyntax as exc:
        raw: bytes = getattr(exc, "_str", b"")
        offset: int = getattr(exc, "_i", 0)
        line = raw[:offset].count(b"\n") + 1 if raw else int(getattr(exc, "lines", 0)) + 1
        col = offset - (raw.rfind(b"\n", 0, offset) + 1) + 1 if raw else 0
        why = getattr(exc, "_why", str(exc))
        raise OntologyError(f"Turtle syntax error at column {col}: {why}", path=source.path, line=line) from None
    except Exception as exc:  # rdflib raises plain exceptions for bad IRIs, literals, etc.
        raise OntologyError(f"cannot parse as Turtle: {exc}", path=source.path) from None


@dataclass
class LoadedGraph:
    graph: Graph
    sources: list[SourceFile]
    unresolved_imports: list[tuple[SourceFile, str]]
    ontology_iris: set[str]


def _import_candidates(iri: str, folders: Sequence[Path]) -> list[Path]:
    if iri.startswith("file:"):
        return [Path(unquote(urlparse(iri).path))]
    seg = iri.rstrip("/#").rsplit("/", 1)[-1].split("#")[0]
    names = [seg, f"{seg}.ttl"] if seg and not seg.endswith(".ttl") else [seg]
    return [f / n for f in folders for n in names if n]


def load_graph(
    paths: Sequence[Path], *, graph: Graph | None = None, follow_imports: bool = True, skip_iris: Iterable[str] = ()
) -> LoadedGraph:
    """Parse ``paths`` into one graph and follow their local ``owl:imports`` (see the module docstring)."""
    g = graph if graph is not None else Graph()
    folders = list(dict.fromkeys(p.parent.resolve() for p in paths))
    loaded: dict[Path, SourceFile] = {}

    def parse(path: Path) -> SourceFile:
        src = SourceFile.read(path)
        parse_into(g, src)
        loaded[path.resolve()] = src
        return src

    for p in paths:
        parse(p)
    unresolved: list[tuple[SourceFile, str]] = []
    skip = set(skip_iris)
    done: set[str] = set()
    while follow_imports:
        declared = {str(s) for s in g.subjects(RDF.type, OWL.Ontology) if isinstance(s, URIRef)}
        known = declared | done | skip
        pending = sorted(str(o) for o in g.objects(None, OWL.imports) if isinstance(o, URIRef) and str(o) not in known)
        if not pending:
            break
        for iri in pending:
            done.add(iri)
            target = next((c for c in _import_candidates(iri, folders) if c.is_file()), None)
            if target is None:
                target = _declaring_file(iri, folders, loaded)
            if target is not None and target.resolve() not in loaded:
                parse(target)
            elif target is None:
                importer = _importer(g, iri, loaded)
                unresolved.append((importer, iri))
    ontology_iris = {str(s) for s in g.subjects(RDF.type, OWL.Ontology) if isinstance(s, URIRef)}
    return LoadedGraph(g, list(loaded.values()), unresolved, ontology_iris)


def _declaring_file(iri: str, folders: Sequence[Path], loaded: dict[Path, SourceFile]) -> Path | None:
    """A not yet loaded ``*.ttl`` in ``folders`` whose text declares ``iri`` an ``owl:Ontology``."""
    for folder in folders:
        for f in sorted(folder.glob("*.ttl")):
            if f.resolve() in loaded:
                continue
            try:
                text = f.read_text("utf-8-sig")
            except (OSError, UnicodeDecodeError):
                continue
            if iri not in text and not any(
                iri.startswith(ns) and f"{p}:{iri[len(ns):]}" in text for p, ns in SourceFile.read(f).prefixes.items()
            ):
                continue
            probe = Graph()
            try:
                probe.parse(data=text, format="turtle", publicID=f.resolve().as_uri())
            except Exception:
                continue
            if (URIRef(iri), RDF.type, OWL.Ontology) in probe:
                return f
    return None


def _importer(g: Graph, iri: str, loaded: dict[Path, SourceFile]) -> SourceFile:
    for src in loaded.values():
        if src.line_of(iri) is not None:
            return src
    return next(iter(loaded.values()))


def normalized_text(text: str) -> str:
    """Line endings, trailing blanks and a byte-order mark do not change what a file means."""
    return "\n".join(line.rstrip() for line in text.lstrip("\ufeff").splitlines()).strip() + "\n"


def fingerprint(ontology: Sequence[SourceFile], shapes: Sequence[SourceFile]) -> str:
    """SHA-256 over the normalized contents, independent of file names, folders and order."""
    h = hashlib.sha256()
    for role, group in (("ontology", ontology), ("shapes", shapes)):
        h.update(role.encode() + b"\0")
        for digest in sorted(hashlib.sha256(normalized_text(s.text).encode()).hexdigest() for s in group):
            h.update(digest.encode() + b"\n")
    return h.hexdigest()
