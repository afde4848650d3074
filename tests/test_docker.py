"""The container files, checked without a Docker engine: docker-compose.yml parsed as YAML for the
server's wiring to Neo4j, and the Dockerfile read for what the image must do (the server extra, a
non-root user, a health check on readiness, ``graphmem serve`` as entry point)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import yaml

from graphmem import MemoryConfig

ROOT = Path(__file__).resolve().parents[1]


def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    return data


def dockerfile() -> list[tuple[str, str]]:
    """(instruction, arguments) of the Dockerfile, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text(encoding="utf-8"))
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_graphmem_service_waits_for_a_healthy_neo4j() -> None:
    services = compose()["services"]
    neo4j, server = services["neo4j"], services["graphmem"]
    assert neo4j["healthcheck"]["test"] and neo4j["healthcheck"]["retries"] >= 1
    assert server["depends_on"] == {"neo4j": {"condition": "service_healthy"}}
    assert server["build"] == "."
    env = server["environment"]
    assert env["GRAPHMEM_STORE__PROVIDER"] == "neo4j"
    assert env["GRAPHMEM_STORE__URI"] == "bolt://neo4j:7687"  # the service name, on compose's network
    assert env["GRAPHMEM_STORE__PASSWORD"] == neo4j["environment"]["NEO4J_AUTH"].split("/", 1)[1]
    # the settings the service passes are ones graphmem loads (names and values)
    cfg = MemoryConfig.load({"store": {"provider": "neo4j", "uri": env["GRAPHMEM_STORE__URI"]},
                             "server": {"host": env["GRAPHMEM_SERVER__HOST"], "port": int(env["GRAPHMEM_SERVER__PORT"]),
                                        "keys_file": env["GRAPHMEM_SERVER__KEYS_FILE"]}})
    assert cfg.server.port == 8000
    # keys come from a mounted file that must exist (no key: the server does not start)
    mount = next(v for v in server["volumes"] if v["target"] == env["GRAPHMEM_SERVER__KEYS_FILE"])
    assert mount["read_only"] is True and mount["bind"]["create_host_path"] is False
    # published on loopback only, to the port the server listens on
    port = re.sub(r"\$\{[^}]*\}", "PORT", server["ports"][0])  # ${GRAPHMEM_PORT:-8000} may hold a colon
    assert port == f"127.0.0.1:PORT:{env['GRAPHMEM_SERVER__PORT']}"
    assert "/readyz" in " ".join(server["healthcheck"]["test"])
    # `docker compose up -d` alone still starts only Neo4j, as before the server existed
    assert server["profiles"] == ["server"] and "profiles" not in neo4j


def test_dockerfile_runs_the_server_as_a_user_with_a_health_check() -> None:
    steps = dockerfile()
    words = [w for w, _ in steps]
    assert steps[0][0] == "FROM" and re.fullmatch(r"python:3\.1[1-9]-slim", steps[0][1])
    installs = [args for w, args in steps if w == "RUN" and "pip install" in args]
    assert installs and any("[server" in a for a in installs)
    user = [args for w, args in steps if w == "USER"]
    assert user and user[-1] not in ("root", "0")
    assert words.index("USER") < words.index("ENTRYPOINT")
    assert any("useradd" in args and user[-1] in args for w, args in steps if w == "RUN")
    health = next(args for w, args in steps if w == "HEALTHCHECK")
    assert "/readyz" in health and "--interval" in health
    entry = next(args for w, args in steps if w == "ENTRYPOINT")
    assert yaml.safe_load(entry) == ["graphmem", "serve"]
    env = " ".join(args for w, args in steps if w == "ENV")
    assert "GRAPHMEM_SERVER__HOST=0.0.0.0" in env and "GRAPHMEM_HOME=/data" in shlex.split(env)
    ignored = (ROOT / ".dockerignore").read_text(encoding="utf-8").split()
    assert ".venv" in ignored and ".git" in ignored
