"""The ``graphmem`` command line: the same operations as the Python API, one command each.

Every command takes the scope options and ``--config FILE`` (YAML or TOML); ``--json`` prints the
exact dict the Python API returns, so scripts can parse what people read. The engine is imported
inside the commands that open a store, so ``--help`` and the ontology commands start without it.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

import typer
from rich.console import Console
from rich.table import Table

from .errors import GraphmemError
from .ontology.cli import ontology_app

if TYPE_CHECKING:
    from .memory import Memory

app = typer.Typer(help="graphmem: a memory engine for AI agents.", no_args_is_help=True, add_completion=False)
console = Console()
err_console = Console(stderr=True)
app.add_typer(ontology_app, name="ontology")

ConfigOpt = Annotated[Path | None, typer.Option("--config", "-c", help="YAML or TOML config file.")]
UserOpt = Annotated[str | None, typer.Option("--user-id", "-u", help="Scope: user id.")]
AgentOpt = Annotated[str | None, typer.Option("--agent-id", "-a", help="Scope: agent id.")]
RunOpt = Annotated[str | None, typer.Option("--run-id", "-r", help="Scope: run id.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the API's result as JSON.")]


def _version(value: bool) -> None:
    if value:
        from . import __version__

        console.print(f"graphmem {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """graphmem: a memory engine for AI agents."""


def _memory(config: Path | None) -> Memory:
    """The configured Memory; a bad configuration or an unreachable store is one line on stderr."""
    from .config import MemoryConfig
    from .memory import Memory

    memory: Memory = _run(lambda: Memory(MemoryConfig.from_file(config) if config else MemoryConfig.load()))
    return memory


def _memory_id(m: Memory, memory_id: str, scope: ScopeArgs) -> str:
    """A full id for the short one a table shows: the one memory in scope whose id starts with it."""
    from .errors import InvalidInputError
    from .models import Scope

    def resolve() -> str:
        found = m.store.ids_with_prefix(Scope.of(**scope), memory_id, 2)
        if memory_id in found or not found:
            return memory_id  # exact, or none: the operation reports what is missing
        if len(found) > 1:
            raise InvalidInputError(f"id prefix {memory_id!r} matches several memories ({', '.join(found)}, ...); "
                                    "give more of the id")
        return found[0]

    resolved: str = _run(resolve)
    return resolved


def _run(action: Any) -> Any:
    try:
        return action()
    except GraphmemError as exc:
        err_console.print(f"[bold red]{type(exc).__name__}[/]: {exc}", highlight=False)
        raise typer.Exit(2) from None


def _json_arg(value: str | None, option: str) -> Any:
    if value is None:
        return None
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        err_console.print(f"[bold red]InvalidInputError[/]: {option} is not JSON: {exc}", highlight=False)
        raise typer.Exit(2) from None


def _emit(result: Any, as_json: bool, table: Table | None = None) -> None:
    if as_json or table is None:
        console.print_json(json.dumps(result, ensure_ascii=False, default=str))
    else:
        console.print(table)


def _records_table(title: str, rows: list[dict[str, Any]], score: bool = False) -> Table:
    table = Table(title=title, show_lines=False)
    if score:
        table.add_column("score", justify="right")
    for col in ("memory", "id", "role", "created_at"):
        table.add_column(col, overflow="fold")
    for r in rows:
        cells = [r["memory"], r["id"][:8], r.get("role", ""), r["created_at"][:19]]
        table.add_row(*([f"{r['score']:.3f}"] if score else []), *cells)
    return table


class ScopeArgs(TypedDict):
    user_id: str | None
    agent_id: str | None
    run_id: str | None


def _scope(user_id: str | None, agent_id: str | None, run_id: str | None) -> ScopeArgs:
    return {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}


@app.command()
def add(
    text: Annotated[str, typer.Argument(help="Text to remember; '-' reads standard input.")],
    user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None,
    role: Annotated[str, typer.Option(help="Message role.")] = "user",
    metadata: Annotated[str | None, typer.Option(help="Metadata as a JSON object.")] = None,
    infer: Annotated[bool, typer.Option(help="Extract memories and facts (else store the text verbatim).")] = True,
    expires_at: Annotated[str | None, typer.Option(help="ISO time after which search skips it.")] = None,
    config: ConfigOpt = None, as_json: JsonOpt = False,
) -> None:
    """Store a message as memory (Memory.add)."""
    content = sys.stdin.read() if text == "-" else text
    meta = _json_arg(metadata, "--metadata")
    with _memory(config) as m:
        result = _run(lambda: m.add({"role": role, "content": content}, metadata=meta, infer=infer,
                                    expires_at=expires_at, **_scope(user_id, agent_id, run_id)))
    table = Table(title="add")
    for col in ("event", "memory", "id"):
        table.add_column(col, overflow="fold")
    for r in result["results"]:
        table.add_row(r["event"], r["memory"], r["id"][:8])
    relations = result.get("relations") or {}
    counts = ", ".join(f"{len(relations.get(k) or [])} {k}" for k in ("added", "superseded", "rejected"))
    table.caption = f"facts: {counts}" if relations else None
    _emit(result, as_json, table)


@app.command()
def search(
    query: str,
    user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None,
    top_k: Annotated[int | None, typer.Option("--top-k", "-k")] = None,
    filters: Annotated[str | None, typer.Option(help="Filters as JSON.")] = None,
    explain: Annotated[bool, typer.Option(help="Show each signal's score.")] = False,
    as_of: Annotated[str | None, typer.Option(help="Rank what was known at this ISO time.")] = None,
    since: Annotated[str | None, typer.Option(help="Only memories at or after this ISO time.")] = None,
    until: Annotated[str | None, typer.Option(help="Only memories before this ISO time.")] = None,
    config: ConfigOpt = None, as_json: JsonOpt = False,
) -> None:
    """Rank memories by relevance to QUERY (Memory.search)."""
    flt = _json_arg(filters, "--filters")
    with _memory(config) as m:
        result = _run(lambda: m.search(query, filters=flt, top_k=top_k, explain=explain, as_of=as_of, since=since,
                                       until=until, **_scope(user_id, agent_id, run_id)))
    _emit(result, as_json or explain, _records_table(f"search: {query}", result["results"], score=True))


@app.command("list")
def list_(
    user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None,
    limit: Annotated[int | None, typer.Option()] = None,
    filters: Annotated[str | None, typer.Option(help="Filters as JSON.")] = None,
    config: ConfigOpt = None, as_json: JsonOpt = False,
) -> None:
    """List memories in a scope, newest first (Memory.get_all)."""
    flt = _json_arg(filters, "--filters")
    with _memory(config) as m:
        result = _run(lambda: m.get_all(filters=flt, limit=limit, **_scope(user_id, agent_id, run_id)))
    _emit(result, as_json, _records_table("memories", result["results"]))


@app.command()
def entities(
    user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None,
    name: Annotated[str | None, typer.Option(help="A fragment of a name or alias.")] = None,
    type_: Annotated[str | None, typer.Option("--type", help="A class of the ontology (subclasses too).")] = None,
    limit: Annotated[int | None, typer.Option()] = None,
    cursor: Annotated[str | None, typer.Option(help="next_cursor of the previous page.")] = None,
    config: ConfigOpt = None, as_json: JsonOpt = False,
) -> None:
    """List the entities of a scope, oldest first (Memory.entities)."""
    with _memory(config) as m:
        result = _run(lambda: m.entities(name=name, type=type_, limit=limit, cursor=cursor,
                                         **_scope(user_id, agent_id, run_id)))
    table = Table(title="entities")
    for col in ("name", "types", "aliases", "mentions", "id"):
        table.add_column(col, overflow="fold")
    for e in result["results"]:
        table.add_row(e["name"], ", ".join(e["types"]), ", ".join(e["aliases"]), str(e["mentions"]), e["id"][:8])
    _emit(result, as_json, _paged(table, result))


@app.command()
def facts(
    user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None,
    entity: Annotated[str | None, typer.Option(help="An entity's id, name or alias.")] = None,
    relation: Annotated[str | None, typer.Option(help="An ontology property (sub-properties, inverse too).")] = None,
    as_of: Annotated[str | None, typer.Option(help="The facts valid at this ISO time.")] = None,
    include_closed: Annotated[bool, typer.Option(help="Also superseded facts.")] = False,
    limit: Annotated[int | None, typer.Option()] = None,
    cursor: Annotated[str | None, typer.Option(help="next_cursor of the previous page.")] = None,
    config: ConfigOpt = None, as_json: JsonOpt = False,
) -> None:
    """List facts with their supporting memories, oldest first (Memory.facts)."""
    with _memory(config) as m:
        result = _run(lambda: m.facts(entity=entity, relation=relation, as_of=as_of, include_closed=include_closed,
                                      limit=limit, cursor=cursor, **_scope(user_id, agent_id, run_id)))
    table = Table(title="facts")
    for col in ("source", "relation", "target", "valid", "memories", "id"):
        table.add_column(col, overflow="fold")
    for f in result["results"]:
        target = f["target"]["name"] if f["target"] else repr(f.get("value"))
        valid = f"{(f['valid_from'] or '')[:10]}..{(f['valid_to'] or '')[:10]}"
        relation_name = f["relation_name"] + (f" ({f['derived']['from']})" if f["derived"] else "")
        table.add_row(f["source"]["name"], relation_name, target, valid, str(len(f["memories"])), f["id"][:8])
    _emit(result, as_json, _paged(table, result))


def _paged(table: Table, result: dict[str, Any]) -> Table:
    if result.get("next_cursor"):
        table.caption = f"more: --cursor {result['next_cursor']}"
    return table


@app.command()
def get(
    memory_id: str, user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Show one memory (Memory.get)."""
    scope = _scope(user_id, agent_id, run_id)
    with _memory(config) as m:
        mid = _memory_id(m, memory_id, scope)
        _emit(_run(lambda: m.get(mid, **scope)), True)


@app.command()
def update(
    memory_id: str,
    text: Annotated[str | None, typer.Argument()] = None,
    metadata: Annotated[str | None, typer.Option(help="JSON merge patch for metadata.")] = None,
    user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None, config: ConfigOpt = None,
) -> None:
    """Change a memory's text and/or metadata (Memory.update)."""
    meta = _json_arg(metadata, "--metadata")
    scope = _scope(user_id, agent_id, run_id)
    with _memory(config) as m:
        mid = _memory_id(m, memory_id, scope)
        _emit(_run(lambda: m.update(mid, text, metadata=meta, **scope)), True)


@app.command()
def delete(
    memory_id: str, user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Delete one memory (Memory.delete)."""
    scope = _scope(user_id, agent_id, run_id)
    with _memory(config) as m:
        mid = _memory_id(m, memory_id, scope)
        _emit(_run(lambda: m.delete(mid, **scope)), True)


@app.command("delete-all")
def delete_all(
    user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None, config: ConfigOpt = None,
) -> None:
    """Delete every memory in a scope (Memory.delete_all)."""
    with _memory(config) as m:
        _emit(_run(lambda: m.delete_all(**_scope(user_id, agent_id, run_id))), True)


@app.command()
def history(
    memory_id: str, user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Show a memory's change history (Memory.history)."""
    scope = _scope(user_id, agent_id, run_id)
    with _memory(config) as m:
        mid = _memory_id(m, memory_id, scope)
        _emit(_run(lambda: m.history(mid, **scope)), True)


@app.command()
def reset(
    yes: Annotated[bool, typer.Option("--yes", help="Confirm deleting every tenant's data.")] = False,
    config: ConfigOpt = None,
) -> None:
    """Delete all memories of all tenants (Memory.reset)."""
    if not yes:
        err_console.print("reset deletes every tenant's memories; pass --yes to confirm")
        raise typer.Exit(2)
    with _memory(config) as m:
        _run(m.reset)
    console.print("store reset")


@app.command()
def optimize(as_json: JsonOpt = False, config: ConfigOpt = None) -> None:
    """Compact the search indexes after a bulk load or many small writes (Memory.optimize)."""
    with _memory(config) as m:
        _emit(_run(m.optimize), as_json)


@ontology_app.command("dry-run")
def dry_run(
    ontology: Annotated[list[Path], typer.Option("--ontology", "-o", help="Changed ontology files or folders.")],
    shapes: Annotated[list[Path] | None, typer.Option("--shapes", "-s", help="Changed shape files or folders.")] = None,
    user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None,
    config: ConfigOpt = None, as_json: JsonOpt = False,
) -> None:
    """Judge the stored facts with a changed ontology and shapes; exit 1 if any would become invalid.

    Without a scope every scope that holds facts is checked. Nothing is written.
    """
    from .ontology import Ontology

    changed = _run(lambda: Ontology.load(ontology, shapes or []))
    with _memory(config) as m:
        report = _run(lambda: m.dry_run(changed, user_id=user_id, agent_id=agent_id, run_id=run_id))
    if as_json:
        _emit(report, True)
    else:
        table = Table(title=f"dry run: {report['checked']} stored facts in {report['scopes']} scopes checked")
        for col in ("scope", "fact", "why"):
            table.add_column(col, overflow="fold")
        for r in report["invalid"]:
            fact = f"{r['source']} {r['relation']} {r['target']}"
            table.add_row(json.dumps(r["scope"]), fact, "\n".join(r["reasons"]))
        console.print(table)
        console.print(f"{len(report['invalid'])} facts would become invalid")
    if report["invalid"]:
        raise typer.Exit(1)


@app.command()
def serve(
    config: ConfigOpt = None,
    host: Annotated[str | None, typer.Option(help="Address to bind (default server.host, 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default server.port, 8000).")] = None,
    keys_file: Annotated[Path | None, typer.Option(help="YAML/JSON file of hashed API keys (server.keys_file).")]
    = None,
    insecure_local: Annotated[bool, typer.Option(
        "--insecure-local", help="Serve 127.0.0.1 without API keys, every request an admin (development).")] = False,
    new_key: Annotated[str | None, typer.Option(
        "--new-key", metavar="ID", help="Print a new API key and its keys-file entry (scope options or --admin), "
        "then exit.")] = None,
    user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None,
    admin: Annotated[bool, typer.Option("--admin", help="With --new-key: an admin key.")] = False,
) -> None:
    """Run the REST server (needs the server extra); see the README's "REST server"."""
    if new_key is not None:
        from .servers.auth import key_entry
        from .servers.auth import new_key as make_key

        key = make_key()
        entry = _run(lambda: key_entry(new_key, key, admin=admin, user_id=user_id, agent_id=agent_id, run_id=run_id))
        err_console.print("The key, shown once (give it to the client; the server keeps only its hash):")
        print(key)
        err_console.print("Its entry for the keys file (under `keys:`):")
        print("- " + json.dumps(entry))
        return
    if user_id or agent_id or run_id or admin:
        err_console.print("--user-id/--agent-id/--run-id/--admin go with --new-key: a served request's scope "
                          "comes from its API key")
        raise typer.Exit(2)
    try:
        from .servers.rest import serve as run_server
    except ImportError as exc:
        err_console.print(f"graphmem serve needs the server extra (pip install 'graphmem[server]'): {exc}")
        raise typer.Exit(2) from None
    from .config import MemoryConfig

    def start() -> None:
        cfg = MemoryConfig.from_file(config) if config else MemoryConfig.load()
        if keys_file is not None:
            cfg.server.keys_file = keys_file
        run_server(cfg, host=host, port=port, insecure_local=insecure_local)

    _run(start)


# -- graphmem view (graphmem/servers/view.py) -------------------------------------------------------
@app.command()
def view(
    user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None,
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port on 127.0.0.1 (0: a free one).")] = 0,
    open_browser: Annotated[bool, typer.Option("--open", help="Open the page in the default browser.")] = False,
    config: ConfigOpt = None,
) -> None:
    """Serve a web page of one scope's graph on 127.0.0.1 (no keys: loopback only) until Ctrl-C."""
    try:
        from .servers.view import serve as serve_view
    except ImportError as exc:
        err_console.print(f"graphmem view needs the server extra (pip install 'graphmem[server]'): {exc}")
        raise typer.Exit(2) from None
    from .models import Scope

    _run(lambda: Scope.of(user_id, agent_id, run_id))  # before the store opens
    scope = _scope(user_id, agent_id, run_id)
    with _memory(config) as m:
        _run(lambda: serve_view(m, scope, port=port, open_browser=open_browser,
                                announce=lambda url: print(f"graph view of {_scope_text(scope)}: {url}",
                                                           flush=True)))


def _scope_text(scope: ScopeArgs) -> str:
    return " ".join(f"{k}={v}" for k, v in scope.items() if v is not None)


DEMO_CONVERSATION = [
    {"role": "user", "content": "Hi, I'm Maya. I work as a data engineer at Northwind in Lisbon.", "name": "Maya"},
    {"role": "assistant", "content": "Nice to meet you, Maya! How can I help?"},
    {"role": "user", "content": "I'm allergic to peanuts, so please never suggest satay.", "name": "Maya"},
    {"role": "user", "content": "My manager Tomás wants the Q3 pipeline migration done by September.",
     "name": "Maya"},
    {"role": "user", "content": "On weekends I go bouldering with my sister Inês.", "name": "Maya"},
]
DEMO_QUERIES = ["is Maya allergic to anything?", "who is her manager?", "what does she do on weekends?"]


@app.command()
def demo(
    home: Annotated[Path | None, typer.Option(help="Store folder (default: a fresh temporary one).")] = None,
) -> None:
    """Add a short conversation, then search it: embedded store, offline, no API key, no server."""
    import tempfile

    from .memory import Memory

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    folder = home or Path(tempfile.mkdtemp(prefix="graphmem-demo-"))
    with Memory({"home": str(folder), "store": {"provider": "sqlite"}}) as m:
        console.rule(f"[bold]graphmem demo[/] — {m.info.backend} store at {m.info.location}")
        result = m.add(DEMO_CONVERSATION, user_id="maya", metadata={"source": "demo"})
        console.print(_records_table("stored memories", m.get_all(user_id="maya")["results"]))
        console.print(f"{len(DEMO_CONVERSATION)} messages, {result['chunks']} chunk(s) → "
                      f"{sum(r['event'] == 'ADD' for r in result['results'])} new memories, "
                      f"extractor: {m.extractor.name}")
        facts = Table(title="facts checked by the ontology guard")
        for col in ("source", "relation", "target", "verdict"):
            facts.add_column(col, overflow="fold")
        for r in result["relations"]["added"]:
            facts.add_row(r["source"], r["relation"], str(r["target"]), "[green]stored[/]")
        for r in result["relations"]["rejected"]:
            facts.add_row(r["source"], r["relation"], str(r["target"]), "[red]quarantined[/]: " + r["reasons"][0])
        console.print(facts)
        for query in DEMO_QUERIES:
            found = m.search(query, user_id="maya", top_k=3)
            console.print(_records_table(f"search: {query}", found["results"], score=True))


if __name__ == "__main__":
    app()
