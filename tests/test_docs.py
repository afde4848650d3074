"""The documentation's examples are tests: every code block of README.md and docs/ runs or is checked.

A broken example (issue 14: the README's own ``update`` call failed on SQLite while the suite was
green) cannot land again. Per language:

- ``python``: every block of a page runs, in order, in one namespace, as a new user would run it: a
  fresh ``GRAPHMEM_HOME``, the embedded store, the offline hashing embedder, a temporary working
  directory holding copies of the checkout's ``ontology/``, ``shapes/`` and ``examples/`` (the paths
  the examples load), no ``GRAPHMEM_*`` or ``OPENAI_*`` settings of the developer's, and no network:
  a block may only connect to this machine;
- ``yaml`` / ``toml``: loads as a ``MemoryConfig``; ``json``: parses; ``turtle``: parses (rdflib);
- ``sh``: every ``graphmem`` command line parses against the real command tree (command, options and
  arguments), and every ``make`` target exists in the Makefile;
- ``text``: output or a synopsis, not run. Any other language is refused, so a block is never
  silently left unchecked.

A block that cannot run may opt out with ``# not run: <reason>`` as its first line; opt-outs are
counted against ``MAX_OPT_OUTS`` (zero) and listed in the failure, so each one is a decision.

The last tests check the docs cover the product: every CLI command, and every configuration field
has the docstring the generated configuration reference (``tools/docs_hooks.py``) is made of.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import json
import re
import shlex
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import rdflib
import typer

from graphmem import Memory, MemoryConfig
from graphmem.cli import app

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
OPT_OUT = "# not run:"
MAX_OPT_OUTS = 0
CHECKED = {"python", "yaml", "toml", "json", "turtle", "sh", "text"}
# typer carries its own copy of click: its exceptions are found through a public one's bases
ClickException: type[Exception] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


@dataclass(frozen=True)
class Block:
    page: Path
    lang: str
    line: int
    """Line of the block's first code line (1-based)."""
    code: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)} line {self.line}"

    @property
    def opt_out(self) -> str | None:
        first = self.code.lstrip().splitlines()[0] if self.code.strip() else ""
        return first[len(OPT_OUT):].strip() or "no reason given" if first.startswith(OPT_OUT) else None


def blocks(page: Path, lang: str | None = None) -> list[Block]:
    """Fenced blocks of ``page`` whose info string starts with ``lang`` (all with None), in order."""
    found: list[Block] = []
    current: str | None = None
    start, body, indent = 0, [], ""
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        fence = line.strip()
        if current is None and fence.startswith("```"):
            indent = line[: len(line) - len(line.lstrip())]
            current, start, body = (fence[3:].strip().split() or [""])[0], number + 1, []
        elif current is not None and fence == "```":
            if lang is None or current == lang:
                found.append(Block(page, current, start, "\n".join(body) + "\n"))
            current = None
        elif current is not None:
            body.append(line[len(indent):] if line.startswith(indent) else line)
    assert current is None, f"{page.relative_to(ROOT)}: a ``` block opened at line {start - 1} is never closed"
    return found


def _ids(pages: list[Path]) -> list[str]:
    return [str(p.relative_to(ROOT)) for p in pages]


class _Network:
    """Refuses connections to other machines (and records them), so an example that would call a
    remote API fails here instead of reaching it."""

    def __init__(self) -> None:
        self.refused: list[str] = []
        self._connect = socket.socket.connect

    @staticmethod
    def local(address: Any) -> bool:
        if not isinstance(address, tuple):
            return True  # AF_UNIX paths
        host = str(address[0])
        try:
            return ipaddress.ip_address(host.split("%")[0]).is_loopback
        except ValueError:
            return host == "localhost"

    def connect(self, sock: socket.socket, address: Any) -> None:
        if not self.local(address):
            self.refused.append(repr(address))
            raise ConnectionRefusedError(f"test_docs: examples may not connect to {address!r}")
        self._connect(sock, address)


@pytest.fixture
def newcomer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> _Network:
    """A fresh user's environment: see the module docstring."""
    import os

    for name in list(os.environ):
        if name.upper().startswith(("GRAPHMEM_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("GRAPHMEM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GRAPHMEM_EMBEDDER__PROVIDER", "hashing")
    # Never sent anywhere (the network is closed); only there in case building a client wants a key.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-docs-not-a-key")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    for folder in ("ontology", "shapes", "examples"):
        shutil.copytree(ROOT / folder, cwd / folder)
    monkeypatch.chdir(cwd)
    network = _Network()
    monkeypatch.setattr(socket.socket, "connect", lambda sock, address: network.connect(sock, address))
    return network


def _check_claims(block: Block, namespace: dict[str, Any]) -> int:
    """What a block's comments promise about its results, checked where the page states it; how
    many claims the block made (the caller fails when the README stops making any)."""
    if 'r["relations"]   # {"added"' not in block.code:
        return 0
    relations = namespace["r"]["relations"]
    for kind in ("added", "superseded", "rejected"):
        assert relations[kind], f"{block.where}: the example's {kind!r} list is empty"
    return 1


def _opted_out() -> list[Block]:
    return [b for page in PAGES for b in blocks(page) if b.opt_out is not None]


PYTHON_PAGES = [p for p in PAGES if blocks(p, "python")]


@pytest.mark.parametrize("page", PYTHON_PAGES, ids=_ids(PYTHON_PAGES))
def test_python_blocks_run(page: Path, newcomer: _Network) -> None:
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    opened: list[Memory] = []
    claims = 0
    try:
        for block in blocks(page, "python"):
            if block.opt_out is not None:
                continue
            # Padding keeps line numbers: a traceback points at the page's own line.
            code = compile("\n" * (block.line - 1) + block.code, str(page), "exec")
            try:
                exec(code, namespace)
            except Exception as exc:
                exc.add_note(f"in the python block at {block.where}")
                raise
            opened.extend(v for v in namespace.values() if isinstance(v, Memory) and v not in opened)
            claims += _check_claims(block, namespace)
    finally:
        for m in opened:
            m.close()
    if page == README:
        assert claims, "the README's quickstart no longer shows what add() reports (added, superseded, rejected)"
    assert not newcomer.refused, f"{page.name}: examples tried to reach other machines: {newcomer.refused}"


def test_no_block_opts_out_and_every_language_is_checked() -> None:
    listed = "\n".join(f"  {b.where}: {b.opt_out}" for b in _opted_out())
    assert len(_opted_out()) <= MAX_OPT_OUTS, f"blocks opt out of running:\n{listed}"
    unchecked = [f"{b.where}: ```{b.lang or '(none)'}" for page in PAGES for b in blocks(page) if b.lang not in CHECKED]
    assert not unchecked, "blocks in a language no test checks (use text for output):\n" + "\n".join(unchecked)


def test_config_blocks_load(tmp_path: Path) -> None:
    configs = [b for page in PAGES for lang in ("yaml", "toml") for b in blocks(page, lang)]
    assert configs, "the docs lost their configuration examples?"
    for i, block in enumerate(configs):
        path = tmp_path / f"block-{i}.{block.lang}"
        path.write_text(block.code, encoding="utf-8")
        try:
            assert isinstance(MemoryConfig.from_file(path), MemoryConfig)  # raises ConfigError naming the field
        except Exception as exc:
            exc.add_note(f"in the {block.lang} block at {block.where}")
            raise


def test_json_and_turtle_blocks_parse() -> None:
    for page in PAGES:
        for block in blocks(page, "json"):
            try:
                json.loads(block.code)
            except ValueError as exc:
                raise AssertionError(f"{block.where}: not JSON: {exc}") from None
        for block in blocks(page, "turtle"):
            try:
                rdflib.Graph().parse(data=block.code, format="turtle")
            except Exception as exc:
                raise AssertionError(f"{block.where}: not Turtle: {exc}") from None


def _command_lines(code: str) -> list[list[str]]:
    """Shell lines as words, continuation lines joined, comments and leading VAR=value removed."""
    lines: list[list[str]] = []
    for line in code.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
            words.pop(0)
        if words:
            lines.append(words)
    return lines


def _unparsed(ctx: Any) -> list[str]:
    """A group context's words for its subcommand (``protected_args`` became private in click 8.2)."""
    return [*(getattr(ctx, "protected_args", None) or getattr(ctx, "_protected_args", ())), *ctx.args]


def _parse(words: list[str]) -> None:
    """Parse a ``graphmem`` command line as the CLI would, without running it: click raises a
    UsageError for an unknown command, option or a missing argument."""
    command: Any = typer.main.get_command(app)
    ctx = command.make_context("graphmem", list(words), resilient_parsing=False)
    while hasattr(command, "commands") and (left := _unparsed(ctx)):
        name, *rest = left
        sub = command.get_command(ctx, name)
        if sub is None:
            raise typer.BadParameter(f"no such command {name!r}")
        command, ctx = sub, sub.make_context(name, rest, parent=ctx, resilient_parsing=False)


def _make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return {m.group(1) for m in re.finditer(r"^([A-Za-z0-9_.-]+):(?!=)", text, re.MULTILINE)}


def test_shell_blocks_name_real_commands() -> None:
    targets = _make_targets()
    checked = 0
    for page in PAGES:
        for block in blocks(page, "sh"):
            for words in _command_lines(block.code):
                if words[0] == "graphmem":
                    try:
                        _parse(words[1:])
                    except typer.Exit:  # --help, --version
                        pass
                    except ClickException as exc:
                        raise AssertionError(f"{block.where}: {shlex.join(words)}: {exc.format_message()}") from None
                    checked += 1
                elif words[0] == "make":
                    unknown = [w for w in words[1:] if "=" not in w and w not in targets]
                    assert not unknown, f"{block.where}: no make target {unknown}"
    assert checked >= 10, f"only {checked} graphmem command lines in the docs' sh blocks?"


def test_the_shell_check_refuses_what_the_cli_refuses() -> None:
    _parse(["search", "q", "-u", "maya", "--top-k", "3"])
    for words in (["serch", "q"], ["search", "q", "--no-such-flag"], ["models", "nothing"]):
        with pytest.raises(ClickException):
            _parse(words)
    assert _command_lines("A=1 graphmem list -u x   # note\ncurl a \\\n  -d b\n") == [
        ["graphmem", "list", "-u", "x"], ["curl", "a", "-d", "b"]]


def _commands(command: Any, prefix: str = "graphmem") -> list[str]:
    if hasattr(command, "commands"):
        return [c for name, sub in sorted(command.commands.items()) if not sub.hidden
                for c in _commands(sub, f"{prefix} {name}")]
    return [prefix]


def test_every_cli_command_is_documented() -> None:
    text = "\n".join(p.read_text(encoding="utf-8") for p in DOCS.rglob("*.md"))
    commands = _commands(typer.main.get_command(app))
    assert len(commands) >= 20, commands
    missing = [c for c in commands if not re.search(re.escape(c) + r"(?![\w-])", text)]
    assert not missing, f"CLI commands docs/ never mentions: {missing}"


def _hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "tools" / "docs_hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_config_field_is_documented() -> None:
    hooks = _hooks()
    fields = list(hooks.fields(MemoryConfig))
    undocumented = [path for path, doc, _, _ in fields if not doc.strip()]
    assert not undocumented, f"config fields without a docstring (the reference is made of them): {undocumented}"
    page = hooks.render()
    for path, _, _, _ in fields:
        assert f"`{path}`" in page, path
    assert "`search.graph.depth`" in page and "GRAPHMEM_SEARCH__GRAPH__DEPTH" in page
    assert str(Path.home()) not in page, "the reference shows the builder's own home as a default"


def test_examples_cannot_reach_other_machines(newcomer: _Network) -> None:
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("192.0.2.1", 443), timeout=1)  # TEST-NET-1: never routed anyway
    assert newcomer.refused and _Network.local(("127.0.0.1", 1)) and _Network.local(("::1", 1, 0, 0))


def test_block_parser_sees_opt_outs_indents_and_languages(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("text\n\n- item\n\n    ```python\n    x = 1\n    ```\n\n```sh\ngraphmem list\n```\n")
    found = blocks(page)
    assert [(b.lang, b.line, b.code) for b in found] == [("python", 6, "x = 1\n"), ("sh", 10, "graphmem list\n")]
    assert Block(page, "python", 1, "# not run: needs a GPU\nx = 1\n").opt_out == "needs a GPU"
    assert Block(page, "python", 1, "x = 1  # not run: no\n").opt_out is None
