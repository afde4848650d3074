"""The README's examples are tests: every ```python block runs, in order, in one namespace.

A broken example (issue 14: the README's own ``update`` call failed on SQLite while the suite was
green) cannot land again. The blocks run as a new user would run them: a fresh ``GRAPHMEM_HOME``,
the embedded store, the offline hashing embedder, a temporary working directory holding copies of
the checkout's ``ontology/`` and ``shapes/`` (the paths the examples load), no ``GRAPHMEM_*`` or
``OPENAI_*`` settings of the developer's, and no network: a block may only connect to this machine.

A block that cannot run may opt out with ``# not run: <reason>`` as its first line; opt-outs are
counted against ``MAX_OPT_OUTS`` (zero) and listed in the failure, so each one is a decision.
"""

from __future__ import annotations

import ipaddress
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from graphmem import Memory, MemoryConfig

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
OPT_OUT = "# not run:"
MAX_OPT_OUTS = 0


@dataclass(frozen=True)
class Block:
    lang: str
    line: int
    """README line of the block's first code line (1-based)."""
    code: str

    @property
    def opt_out(self) -> str | None:
        first = self.code.lstrip().splitlines()[0] if self.code.strip() else ""
        return first[len(OPT_OUT):].strip() or "no reason given" if first.startswith(OPT_OUT) else None


def readme_blocks(lang: str) -> list[Block]:
    """Fenced blocks whose info string starts with ``lang``, in README order."""
    blocks: list[Block] = []
    current: str | None = None
    start, body = 0, []
    for number, line in enumerate(README.read_text(encoding="utf-8").splitlines(), start=1):
        fence = line.strip()
        if current is None and fence.startswith("```"):
            current, start, body = (fence[3:].strip().split() or [""])[0], number + 1, []
        elif current is not None and fence == "```":
            if current == lang:
                blocks.append(Block(lang, start, "\n".join(body) + "\n"))
            current = None
        elif current is not None:
            body.append(line)
    assert current is None, f"README.md: a ``` block opened at line {start - 1} is never closed"
    return blocks


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
            raise ConnectionRefusedError(f"test_readme: README examples may not connect to {address!r}")
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
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-readme-not-a-key")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    for folder in ("ontology", "shapes"):
        shutil.copytree(ROOT / folder, cwd / folder)
    monkeypatch.chdir(cwd)
    network = _Network()
    monkeypatch.setattr(socket.socket, "connect", lambda sock, address: network.connect(sock, address))
    return network


def _check_claims(block: Block, namespace: dict[str, Any]) -> int:
    """What a block's comments promise about its results, checked where the README states it; how
    many claims the block made (the caller fails when the README stops making any)."""
    if 'r["relations"]   # {"added"' not in block.code:
        return 0
    relations = namespace["r"]["relations"]
    for kind in ("added", "superseded", "rejected"):
        assert relations[kind], f"README.md line {block.line}: the example's {kind!r} list is empty"
    return 1


def test_readme_python_blocks_run(newcomer: _Network) -> None:
    blocks = readme_blocks("python")
    assert len(blocks) >= 3, "README.md lost its Python examples?"
    namespace: dict[str, Any] = {"__name__": "__readme__"}
    opened: list[Memory] = []
    claims = 0
    skipped = [(b.line, b.opt_out) for b in blocks if b.opt_out is not None]
    try:
        for block in blocks:
            if block.opt_out is not None:
                continue
            # Padding keeps line numbers: a traceback points at the README's own line.
            code = compile("\n" * (block.line - 1) + block.code, str(README), "exec")
            try:
                exec(code, namespace)
            except Exception as exc:
                exc.add_note(f"in the README.md python block starting at line {block.line}")
                raise
            opened.extend(v for v in namespace.values() if isinstance(v, Memory) and v not in opened)
            claims += _check_claims(block, namespace)
    finally:
        for m in opened:
            m.close()
    assert claims, "the README's quickstart no longer shows what add() reports (added, superseded, rejected)"
    assert not newcomer.refused, f"README examples tried to reach other machines: {newcomer.refused}"
    listed = "\n".join(f"  line {line}: {reason}" for line, reason in skipped)
    assert len(skipped) <= MAX_OPT_OUTS, f"{len(skipped)} README blocks opt out of running:\n{listed}"


def test_readme_yaml_config_loads(tmp_path: Path) -> None:
    blocks = readme_blocks("yaml")
    assert blocks, "README.md lost its YAML configuration example?"
    for i, block in enumerate(blocks):
        path = tmp_path / f"readme-{i}.yaml"
        path.write_text(block.code, encoding="utf-8")
        config = MemoryConfig.from_file(path)  # raises ConfigError naming the bad field
        assert isinstance(config, MemoryConfig)


def test_examples_cannot_reach_other_machines(newcomer: _Network) -> None:
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("192.0.2.1", 443), timeout=1)  # TEST-NET-1: never routed anyway
    assert newcomer.refused and _Network.local(("127.0.0.1", 1)) and _Network.local(("::1", 1, 0, 0))


def test_block_parser_sees_opt_outs_and_languages() -> None:
    assert Block("python", 1, "# not run: needs a GPU\nx = 1\n").opt_out == "needs a GPU"
    assert Block("python", 1, "x = 1  # not run: no\n").opt_out is None
    assert {b.lang for b in readme_blocks("python")} == {"python"}
