"""``graphmem ontology …``: the domain modeller's commands (check, show, test).

Every command takes ``--ontology`` and ``--shapes`` (files or folders, repeatable), defaulting to the
repository's ``ontology/`` and ``shapes/``. ``--json`` prints what programs need; exit codes are 0 for
clean, 1 for problems found or failing cases, 2 for files that cannot be used at all. rdflib, owlrl
and pySHACL are imported by the command that runs, not by ``graphmem --help``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..errors import OntologyError
from ..terminal import error, note, print_json

if TYPE_CHECKING:
    from .model import Ontology

ontology_app = typer.Typer(help="Check, show and test ontology and SHACL shapes files.", no_args_is_help=True,
                           add_completion=False)
console = Console(emoji=False)

OntologyOpt = Annotated[list[Path] | None, typer.Option(
    "--ontology", "-o", help="Ontology Turtle file or folder (repeatable). Default: the bundled ontology/.")]
ShapesOpt = Annotated[list[Path] | None, typer.Option(
    "--shapes", "-s", help="SHACL shapes file or folder (repeatable). Default: the bundled shapes/.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]


def _paths(ontology: list[Path] | None, shapes: list[Path] | None) -> tuple[list[Path], list[Path]]:
    from .model import default_paths

    if ontology and shapes is not None:
        return ontology, shapes
    try:
        default_onto, default_shapes = default_paths()
    except OntologyError as exc:
        error("OntologyError", str(exc))
        raise typer.Exit(2) from None
    return ontology or default_onto, default_shapes if shapes is None else shapes


def _load(ontology: list[Path] | None, shapes: list[Path] | None) -> Ontology:
    from .model import Ontology

    onto_paths, shape_paths = _paths(ontology, shapes)
    try:
        return Ontology.load(onto_paths, shape_paths, strict=False)
    except OntologyError as exc:
        error("OntologyError", str(exc))
        raise typer.Exit(2) from None


def _emit_json(data: Any) -> None:
    print_json(data)


@ontology_app.command()
def check(ontology: OntologyOpt = None, shapes: ShapesOpt = None, as_json: JsonOpt = False) -> None:
    """Lint ontology and shapes files.

    Syntax, meta-SHACL, unknown sh: terms, missing classes and properties, impossible counts, unsafe or
    colliding Neo4j names, ambiguous synonyms."""
    from .lint import check as lint_check

    onto_paths, shape_paths = _paths(ontology, shapes)
    problems = lint_check(onto_paths, shape_paths)
    errors = [p for p in problems if p.severity == "error"]
    if as_json:
        _emit_json({"ok": not errors, "problems": [p.to_dict() for p in problems]})
    else:
        for p in problems:
            style = "red" if p.severity == "error" else "yellow"
            console.print(f"{escape(p.where)}: [{style}]{p.severity}[/]: {escape(p.message)}",
                          highlight=False, soft_wrap=True)
        warnings = len(problems) - len(errors)
        summary = f"{len(errors)} error(s), {warnings} warning(s)"
        files = ", ".join(str(p) for p in [*onto_paths, *shape_paths])
        colour = "red" if errors else "green"
        console.print(f"[{colour}]{summary}[/] in {escape(files)}", highlight=False, soft_wrap=True)
    if errors:
        raise typer.Exit(1)


def _short_list(onto: Ontology, iris: tuple[str, ...] | list[str]) -> str:
    return ", ".join(onto.short(i) for i in iris)


@ontology_app.command()
def show(ontology: OntologyOpt = None, shapes: ShapesOpt = None, as_json: JsonOpt = False) -> None:
    """List classes (with parents) and relations (with characteristics) and their Neo4j names."""
    onto = _load(ontology, shapes)
    for p in onto.problems:
        if p.severity == "error":
            note(str(p))
    if as_json:
        _emit_json(onto.to_dict())
        return
    classes = Table(title=f"classes ({len(onto.classes)})")
    for col in ("class", "Neo4j label", "parents", "label", "synonyms"):
        classes.add_column(col, overflow="fold", no_wrap=col in ("class", "Neo4j label"))
    for c in onto.classes.values():
        classes.add_row(onto.short(c.iri), c.neo4j_label, _short_list(onto, c.parents), c.label,
                        ", ".join(c.alt_labels))
    console.print(classes)
    rels = Table(title=f"relations ({len(onto.relations)})")
    for col in ("relation", "kind", "Neo4j type", "domain → range", "inverse", "characteristics", "super-properties",
                "synonyms"):
        rels.add_column(col, overflow="fold", no_wrap=col in ("relation", "kind", "Neo4j type", "inverse"))
    for r in onto.relations.values():
        chars = [n for n, on in (("symmetric", r.symmetric), ("transitive", r.transitive),
                                 ("functional", r.functional)) if on]
        rels.add_row(onto.short(r.iri), r.kind, r.neo4j_type or "(node property)",
                     f"{_short_list(onto, r.domain) or '*'} → {_short_list(onto, r.range) or '*'}",
                     onto.short(r.inverse) if r.inverse else "", ", ".join(chars),
                     _short_list(onto, r.super_properties), ", ".join(r.alt_labels))
    console.print(rels)
    console.print(f"fingerprint {onto.fingerprint}", highlight=False)


@ontology_app.command("test")
def test_(
    manifests: Annotated[list[Path] | None, typer.Argument(
        help="W3C SHACL test manifests (or folders with a manifest.ttl) or DASH test files. "
             "Default: tests/manifest.ttl next to each shapes folder.")] = None,
    ontology: OntologyOpt = None,
    shapes: ShapesOpt = None,
    merge_ontology: Annotated[bool, typer.Option(
        "--merge-ontology/--no-merge-ontology",
        help="Merge the ontology's subclass closure into each data graph, as the write guard does. "
             "Turn off for plain SHACL suites such as the W3C tests.")] = True,
    as_json: JsonOpt = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show pySHACL warnings.")] = False,
) -> None:
    """Run example cases (W3C SHACL test manifest or DASH format): pass/fail per case."""
    from .manifest import load_cases, run_cases
    from .model import Ontology

    logging.getLogger("graphmem.ontology.shacl").setLevel(logging.WARNING if verbose else logging.ERROR)
    onto_paths, shape_paths = _paths(ontology, shapes)
    if not manifests:
        folders = dict.fromkeys(p if p.is_dir() else p.parent for p in shape_paths)
        manifests = [d / "tests" / "manifest.ttl" for d in folders if (d / "tests" / "manifest.ttl").is_file()]
        if not manifests:
            error("UsageError", "no test manifest given and none found under the shapes folders (tests/manifest.ttl)")
            raise typer.Exit(2)
    try:
        cases = load_cases(manifests)
        tbox = Ontology.load(onto_paths, shape_paths, strict=False).tbox if merge_ontology else None
    except OntologyError as exc:
        error("OntologyError", str(exc))
        raise typer.Exit(2) from None
    if not cases:
        note("the manifests hold no sht:Validate entries or DASH test cases")
        raise typer.Exit(1)
    results = run_cases(cases, tbox=tbox)
    failed = [r for r in results if not r.passed]
    if as_json:
        _emit_json({"passed": len(results) - len(failed), "failed": len(failed),
                    "cases": [r.to_dict() for r in results]})
    else:
        for r in results:
            mark = "[green]PASS[/]" if r.passed else f"[red]{r.status.upper()}[/]"
            console.print(f"{mark} {escape(r.case.label)}  [dim]{escape(r.case.id)}[/]",
                          highlight=False, soft_wrap=True)
            if not r.passed:
                if r.expected_conforms is not None and r.expected_conforms != r.conforms:
                    console.print(f"     conforms: expected {r.expected_conforms}, got {r.conforms}", highlight=False)
                for m in r.missing:
                    console.print(f"     missing:    {escape(m)}", highlight=False, soft_wrap=True)
                for u in r.unexpected:
                    console.print(f"     unexpected: {escape(u)}", highlight=False, soft_wrap=True)
                if r.detail:
                    console.print(f"     {escape(r.detail)}", highlight=False, soft_wrap=True)
        colour = "red" if failed else "green"
        console.print(f"[{colour}]{len(results) - len(failed)} passed, {len(failed)} failed[/]", highlight=False)
    if failed:
        raise typer.Exit(1)
