"""A server's first request against its later ones: ``graphmem serve`` (REST) and ``graphmem mcp`` (stdio),
started as a user starts them (default configuration: all-MiniLM-L6-v2, the rule extractor, SQLite).

    python bench/server_first.py [--requests 20] [--ref REV] [--out bench/results/server_first.json]

REST: the clock starts when ``/readyz`` first answers ready; then one ``add`` (``infer`` on) and one
``search``, then ``--requests`` more of each with other texts. MCP: the client's ``initialize`` and
``tools/list`` return (an agent lists the tools first; the client does it before its first call anyway),
then ``add_memory`` and ``search_memories`` the same way. The client's own first-call costs are not the
server's: ``jsonschema`` (which the client imports to check a tool's structured result) is imported
beforehand, and the client's validator of each tool's output schema (built on its first result) is
built after ``tools/list``; its time is reported as ``client_schema_compile_ms``.
Printed: the first request's time, the median of the rest and their ratio (the target is at most 2).
``--ref`` runs a commit's tree instead (a temporary ``git worktree`` on ``PYTHONPATH``), e.g. the one
before servers warmed up.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import serving  # bench/serving.py: this folder is the script's first import path

ROOT = Path(__file__).resolve().parents[1]
TEXTS = ["I moved to Lisbon last year and work for Northwind.", "My sister Ana is a nurse in Porto.",
         "I am allergic to peanuts.", "We adopted a cat called Miso in March.", "I speak Portuguese and German.",
         "My manager is Tomas Berg.", "I started running marathons in 2021.", "I drive a blue Volvo.",
         "I'm learning the cello.", "My partner Sam works at Globex as a designer.",
         "I graduated from the University of Porto in 2015.", "My brother Rui teaches maths in Braga.",
         "I volunteer at the food bank on Saturdays.", "We bought a flat near the river in 2022.",
         "I collect vintage cameras.", "My daughter attends Escola Verde.", "I follow a vegetarian diet.",
         "I visited Japan two years ago.", "I take insulin for my diabetes.", "My friend Lea founded a bakery.",
         "I play chess with my neighbour every Sunday.", "I was born in Faro."]
"""Each says something new (its verbs and names too), as a user's messages do: a first-time phrase costs
an embedding more in every request, not only in the first."""
QUESTIONS = ["where does the user live?", "what pets are there?", "what languages?", "who is the manager?",
             "which car?", "what instrument?", "any allergies?", "what does Sam do?"]


def text(i: int) -> str:
    return TEXTS[i % len(TEXTS)] + ("" if i < len(TEXTS) else f" (note {i})")


def summary(first: float, rest: list[float]) -> dict[str, float]:
    median = statistics.median(rest)
    return {"first_ms": round(first * 1000, 1), "median_ms": round(median * 1000, 1), "ratio": round(first / median, 2)}


def rest(env: dict[str, str], home: Path, requests: int) -> dict[str, Any]:
    port = serving.free_port()
    (home / "c.yaml").write_text(f"home: {home}\n")
    started = time.perf_counter()
    server = subprocess.Popen([sys.executable, "-m", "graphmem", "serve", "--insecure-local", "--port", str(port),
                               "--config", str(home / "c.yaml")], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=url, timeout=120) as client:
            while True:
                try:
                    if client.get("/readyz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if server.poll() is not None:
                    raise RuntimeError("graphmem serve exited")
                time.sleep(0.05)
            ready = time.perf_counter() - started
            adds, searches = [], []
            for i in range(requests + 1):
                t0 = time.perf_counter()
                client.post("/v1/memories", json={"messages": text(i), "user_id": "u"}).raise_for_status()
                adds.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                question = QUESTIONS[i % len(QUESTIONS)]
                client.post("/v1/search", json={"query": question, "user_id": "u"}).raise_for_status()
                searches.append(time.perf_counter() - t0)
    finally:
        server.terminate()
        server.wait(timeout=30)
    return {"ready_s": round(ready, 2), "add": summary(adds[0], adds[1:]), "search": summary(searches[0], searches[1:])}


def client_validators(client: Any, tools: list[Any]) -> dict[str, float]:
    """Build the client's output-schema validators now, as its first result of each tool would (a
    client cost, whatever the server); milliseconds per tool."""
    build = getattr(client.session, "_output_schema_validator", None)
    spent: dict[str, float] = {}
    for tool in tools:
        if build is not None and tool.output_schema is not None:
            t0 = time.perf_counter()
            build(tool.name, tool.output_schema)
            spent[tool.name] = round((time.perf_counter() - t0) * 1000, 1)
    return spent


def mcp(env: dict[str, str], home: Path, requests: int) -> dict[str, Any]:
    import jsonschema  # noqa: F401 - the client validates tool results with it, imported on its first call
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    (home / "c.yaml").write_text(f"home: {home}\n")

    async def run() -> dict[str, Any]:
        params = StdioServerParameters(command=sys.executable, env=env, args=[
            "-m", "graphmem", "mcp", "--config", str(home / "c.yaml"), "--user-id", "u"])
        started = time.perf_counter()
        async with Client(params, read_timeout_seconds=300) as client:
            listed = await client.list_tools()  # as an agent does before using them (the client's first call would)
            ready = time.perf_counter() - started
            compile_ms = client_validators(client, listed.tools)
            adds, searches = [], []
            for i in range(requests + 1):
                t0 = time.perf_counter()
                await client.call_tool("add_memory", {"text": text(i)})
                adds.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                await client.call_tool("search_memories", {"query": QUESTIONS[i % len(QUESTIONS)]})
                searches.append(time.perf_counter() - t0)
        return {"initialized_s": round(ready, 2), "client_schema_compile_ms": compile_ms,
                "add": summary(adds[0], adds[1:]), "search": summary(searches[0], searches[1:])}

    return asyncio.run(run())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--requests", type=int, default=20)
    p.add_argument("--ref", default=None)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    worktree = None
    if args.ref:
        worktree = Path(tempfile.mkdtemp(prefix="graphmem-ref-")) / "src"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(worktree), args.ref],
                       check=True)
        env["PYTHONPATH"] = str(worktree)
    result: dict[str, Any] = {}
    try:
        for name, fn in (("rest", rest), ("mcp", mcp)):
            with tempfile.TemporaryDirectory() as home:
                result[name] = fn(env, Path(home), args.requests)
            r = result[name]
            print(f"{name:5} " + "  ".join(f"{op}: first {r[op]['first_ms']} ms, median {r[op]['median_ms']} ms "
                                           f"({r[op]['ratio']}x)" for op in ("add", "search")))
    finally:
        if worktree is not None:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)], check=False)
    out = {"benchmark": "server first request vs the median of the next ones",
           "command": "python bench/server_first.py", "ref": args.ref or "working tree", "requests": args.requests,
           "results": result}
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
