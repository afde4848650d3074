"""Start ``graphmem serve`` for a benchmark: the benchmarks that time the REST server share these."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import yaml


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(cfg: dict[str, Any], home: Path, port: int, *, env: Mapping[str, str] | None = None,
                 program: Sequence[str] | None = None) -> subprocess.Popen[bytes]:
    """``graphmem serve`` on ``port`` with ``cfg`` (written to ``home/server.yaml``), its output in
    ``home/server.log``; ``program`` replaces ``python -m graphmem`` (a wrapper that takes the same
    arguments)."""
    path = home / "server.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    cmd = [*(program or [sys.executable, "-m", "graphmem"]), "serve", "--config", str(path), "--port", str(port)]
    log = (home / "server.log").open("wb")
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=dict(env) if env else None, cwd=home)


def wait_ready(url: str, proc: subprocess.Popen[bytes], timeout: float = 600) -> None:
    """Until ``url``'s ``/readyz`` answers 200; a server that exits or never answers raises."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"graphmem serve exited with {proc.returncode}")
        try:
            if httpx.get(f"{url}/readyz", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError("graphmem serve did not get ready")
