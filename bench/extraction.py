"""Extraction quality on the hand-written gold set: what ``Memory.add`` *stores*, scored against it.

    python bench/extraction.py --extractor rules|llm [--gold F] [--config F] [--base-url URL --model M]
        [--standin] [--baseline REV] [--limit N] [--worst 8] [--out F]

Every conversation of ``bench/data/extraction-gold.jsonl`` goes through the public API, one ``add``
(``infer=True``, ``timestamp`` = its reference time) into its own scope of a fresh temporary SQLite
store, with the default embedder (all-MiniLM-L6-v2 offline; ``--embedder hashing`` for the figures
measured before it was the default). What is then read back (``get_all``, ``facts`` with
closed ones, ``entities``) is scored: that is what a user gets after chunking, the ontology guard and
conflict resolution, not the extractor's raw output. Scoring rules: ``bench/extraction_score.py``.

``--extractor rules``: no LLM (the rule-based extractor). ``--extractor llm``: an OpenAI-compatible
server from ``--config`` (a graphmem config file) or ``--base-url``/``--model``; ``--standin`` starts
the suite's stand-in server in-process instead (its fact-line "model" extracts nothing from natural
conversations, so its precision/recall mean nothing: it measures the tokens the prompt costs).
Tokens per conversation come from the add result's ``usage`` when graphmem reports it; with
``--standin`` they are also counted from the request bodies the server received (graphmem's token
counter for the model: tiktoken when it can load, else its offline estimate, named in the output).
``--baseline REV`` runs the same conversations on another commit's code (a temporary worktree, a child
process with ``PYTHONPATH`` on it, run from outside the checkout) and scores both with these rules.
A conversation whose ``add`` raises is recorded with its error and counts as storing nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from extraction_score import relations_of, scope_user, score

ROOT = Path(__file__).resolve().parents[1]
GOLD = ROOT / "bench" / "data" / "extraction-gold.jsonl"
RESULTS = ROOT / "bench" / "results"


def load_gold(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _unknown_relations(gold: list[dict[str, Any]], known: frozenset[str]) -> list[str]:
    """Gold relations outside the ontology, commonest first."""
    counts = Counter(t[1] for conv in gold for t in conv.get("triples", []) if t[1] not in known)
    return [name for name, _ in counts.most_common()]


def _all(page_fn: Any, **kwargs: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = page_fn(cursor=cursor, limit=500, **kwargs)
        out += page["results"]
        cursor = page.get("next_cursor")
        if not cursor:
            return out


def _usage(result: dict[str, Any]) -> dict[str, int] | None:
    """``usage`` of an add result, whatever its key spelling (``prompt_tokens`` or ``prompt``)."""
    usage = result.get("usage")
    if not isinstance(usage, dict):
        return None
    def pick(*names: str) -> int:
        return next((int(usage[n]) for n in names if isinstance(usage.get(n), int | float)), 0)
    return {"prompt": pick("prompt_tokens", "prompt"), "completion": pick("completion_tokens", "completion"),
            "calls": pick("calls", "requests"), "repairs": pick("repairs", "repair_calls")}


def _config(args: argparse.Namespace, home: Path, base_url: str | None) -> dict[str, Any]:
    cfg: dict[str, Any] = {}
    if args.config:
        from graphmem import MemoryConfig

        cfg = MemoryConfig.from_file(args.config).model_dump(mode="json", exclude_none=True)
        here = Path(args.config).resolve().parent  # ontology files named relative to the config file
        for key in ("ontology", "shapes"):
            if cfg.get("ontology", {}).get(key):
                cfg["ontology"][key] = [str(here / f) for f in cfg["ontology"][key]]
        for secret in ("llm", "embedder"):  # SecretStr dumps masked; take the real key back
            key = getattr(getattr(MemoryConfig.from_file(args.config), secret), "api_key", None)
            if key is not None:
                cfg[secret]["api_key"] = key.get_secret_value()
    cfg["home"] = str(home)
    cfg["store"] = {"provider": "sqlite", "path": str(home / "gold.db")}
    cfg.setdefault("embedder", {"provider": "hashing" if args.embedder == "hashing" else "auto"})
    cfg["extraction"] = {**cfg.get("extraction", {}), "provider": args.extractor}
    if args.extractor == "rules":
        cfg["llm"] = {"provider": "none"}
        if args.granularity:
            cfg["extraction"]["rules"] = {**cfg["extraction"].get("rules", {}), "granularity": args.granularity}
    elif base_url or not args.config:
        cfg["llm"] = {**cfg.get("llm", {}), "provider": "openai", "base_url": base_url or args.base_url,
                      "model": args.model, "api_key": os.environ.get("OPENAI_API_KEY", "not-needed")}
    return cfg


def collect(args: argparse.Namespace, gold: list[dict[str, Any]]) -> dict[str, Any]:
    """Run every conversation through ``Memory.add`` and read back what was stored (plain JSON)."""
    import graphmem
    from graphmem import Memory
    from graphmem.errors import GraphmemError

    standin = None
    counted: list[int] = []
    if args.standin:
        from graphmem.testing.fake_llm import fact_responder
        from graphmem.testing.standin import StandinServer

        def respond(body: dict[str, Any]) -> str:
            answer = fact_responder(body)
            counted.append(len(answer))
            return answer

        standin = StandinServer().start()
        standin.chat_responder = respond
    runs: dict[str, Any] = {}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gold-") as home:
        m = Memory(_config(args, Path(home), standin.base_url if standin else None))
        counter = _counter(m) if standin else None
        try:
            for conv in gold:
                scope = {"user_id": scope_user(conv["id"])}
                seen = len(standin.chat_requests) if standin else 0
                run: dict[str, Any] = {"error": None, "usage": None}
                started = time.perf_counter()
                try:
                    result = m.add(conv["messages"], timestamp=conv["reference_time"], **scope)
                    run["usage"] = _usage(result)
                except GraphmemError as e:
                    run["error"] = f"{type(e).__name__}: {e}"
                run["add_s"] = time.perf_counter() - started
                if standin is not None and counter is not None:
                    bodies = standin.chat_requests[seen:]
                    run["sent"] = {
                        "prompt": sum(counter.count(msg.get("content") or "") + 4 for b in bodies
                                      for msg in b.get("messages", [])),
                        "system": sum(counter.count(msg.get("content") or "") for b in bodies
                                      for msg in b.get("messages", []) if msg.get("role") == "system"),
                        "calls": len(bodies)}
                run["memories"] = m.get_all(limit=1000, **scope)["results"]
                run["facts"] = _all(m.facts, include_closed=True, **scope)
                run["entities"] = _all(m.entities, **scope)
                runs[conv["id"]] = run
        finally:
            m.close()
            if standin is not None:
                standin.stop()
    return {"graphmem": graphmem.__file__, "seconds": round(time.perf_counter() - t0, 2),
            "speed": _speed(gold, runs), "token_counter": counter.name if counter else None, "runs": runs}


def _speed(gold: list[dict[str, Any]], runs: dict[str, Any]) -> dict[str, float]:
    """The first ``add`` of the process (it loads the extractor's models) apart; the others as messages
    per second of ``add`` time (extraction, guard and write; not the read-back for scoring)."""
    first, *rest = gold
    seconds = sum(runs[c["id"]]["add_s"] for c in rest)
    messages = sum(len(c["messages"]) for c in rest)
    return {"first_add_s": round(runs[first["id"]]["add_s"], 3), "messages": messages,
            "messages_per_s": round(messages / seconds, 1) if seconds else 0.0}


def _counter(m: Any) -> Any:
    from graphmem.chunking import token_counter

    return token_counter(m.config.llm.model)


def run_baseline(args: argparse.Namespace, gold_path: Path) -> tuple[dict[str, Any], str]:
    """The same collection on commit ``args.baseline``: a temporary worktree, a child process of this
    script with ``PYTHONPATH`` on that tree, its cwd outside the checkout (else ``sys.path`` would put
    this checkout's ``graphmem`` first)."""
    base = Path(tempfile.mkdtemp(prefix="gold-baseline-"))
    tree = base / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(tree), args.baseline],
                   check=True)
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.baseline], check=True,
                            capture_output=True, text=True).stdout.strip()
    try:
        out = base / "collected.json"
        argv = [sys.executable, str(Path(__file__).resolve()), "--extractor", args.extractor, "--gold",
                str(gold_path), "--collect-only", str(out), "--model", args.model, "--embedder", args.embedder]
        argv += ["--granularity", args.granularity] if args.granularity else []
        argv += ["--standin"] if args.standin else []
        argv += ["--base-url", args.base_url] if args.base_url else []
        argv += ["--config", str(Path(args.config).resolve())] if args.config else []
        env = {**os.environ, "PYTHONPATH": str(tree)}
        subprocess.run(argv, env=env, check=True, cwd=tempfile.gettempdir(), timeout=3600)
        collected: dict[str, Any] = json.loads(out.read_text())
        if not collected["graphmem"].startswith(str(tree)):
            raise SystemExit(f"baseline imported {collected['graphmem']}, not the tree {tree}")
        return collected, commit
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)


def _sum_sent(collected: dict[str, Any]) -> dict[str, Any] | None:
    sent = [r["sent"] for r in collected["runs"].values() if r.get("sent")]
    if not sent:
        return None
    n = len(collected["runs"])
    total = {k: sum(s[k] for s in sent) for k in ("prompt", "system", "calls")}
    return {"token_counter": collected["token_counter"], "total": total,
            "per_conversation": {k: round(v / n, 1) for k, v in total.items()},
            "system_per_call": round(total["system"] / total["calls"], 1) if total["calls"] else None}


def report(name: str, result: dict[str, Any], worst: int) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(title=f"extraction on the gold set: {name} ({result['conversations']} conversations)")
    for col in ("", "precision", "recall", "F1", "tp", "gold", "stored"):
        table.add_column(col, justify="right" if col else "left")
    for what in ("triples", "memories"):
        s = result[what]
        table.add_row(what, *(f"{s[k]:.3f}" for k in ("precision", "recall", "f1")),
                      *(str(s[k]) for k in ("tp", "gold", "stored")))
    console.print(table)
    tags = Table(title="per tag (F1)")
    for col in ("tag", "triples F1", "triples gold", "memories F1", "memories gold"):
        tags.add_column(col)
    for tag, v in result["per_tag"].items():
        tags.add_row(tag, f"{v['triples']['f1']:.3f}", str(v["triples"]["gold"]), f"{v['memories']['f1']:.3f}",
                     str(v["memories"]["gold"]))
    console.print(tags)
    small = result["smalltalk"]
    if result.get("speed"):
        sp = result["speed"]
        console.print(f"speed: first add {sp['first_add_s']} s; then {sp['messages_per_s']} messages/s "
                      f"({sp['messages']} messages, add time only)")
    v = result.get("validity")
    if v and v["rows"]:
        console.print(f"validity: {v['rows']} stated starts or ends; the fact found for {v['found']}, "
                      f"with the stated month for {v['dated']}")
    console.print(f"small talk: {small['conversations']} conversations, {small['with_anything_stored']} stored "
                  f"something ({small['memories']} memories, {small['facts']} facts: all false positives)")
    tok = result["tokens"]["per_conversation"]
    console.print(f"tokens per conversation (add result usage): prompt {tok['prompt']}, completion "
                  f"{tok['completion']}, calls {tok['calls']}, repairs {tok['repairs']}")
    if result.get("sent"):
        s = result["sent"]
        console.print(f"sent to the server, counted ({s['token_counter']}): prompt {s['per_conversation']['prompt']}"
                      f" tokens per conversation, system part {s['system_per_call']} per call, "
                      f"{s['per_conversation']['calls']} calls per conversation")
    if result["errors"]:
        console.print(f"[red]{result['errors']} conversations raised[/red]")
    rows = sorted(result["per_conversation"], key=lambda r: (r["triples"]["f1"] + r["memories"]["f1"], r["id"]))
    bad = Table(title=f"worst {worst} conversations")
    for col in ("id", "triples F1", "missed triples", "extra triples", "memories F1"):
        bad.add_column(col, overflow="fold")
    for r in rows[:worst]:
        bad.add_row(r["id"], f"{r['triples']['f1']:.2f}", "; ".join(r["triples"]["missed"]),
                    "; ".join(r["triples"]["extra"]), f"{r['memories']['f1']:.2f}")
    console.print(bad)


def _commit() -> str:
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--extractor", choices=["rules", "llm"], required=True)
    p.add_argument("--gold", type=Path, default=GOLD)
    p.add_argument("--config", help="a graphmem config file (YAML/TOML): its llm section is used")
    p.add_argument("--base-url", help="an OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1")
    p.add_argument("--model", default="gpt-4o-mini")
    p.add_argument("--standin", action="store_true", help="the suite's stand-in server, in-process (tokens only)")
    p.add_argument("--baseline", help="also run on this commit's code and compare")
    p.add_argument("--embedder", choices=["default", "hashing"], default="default",
                   help="default: what a user gets (all-MiniLM-L6-v2 offline); hashing: the figures before issue 38")
    p.add_argument("--granularity", choices=["statement", "sentence", "message"],
                   help="the rule extractor's memories (default: the product's default)")
    p.add_argument("--limit", type=int, help="only the first N conversations")
    p.add_argument("--worst", type=int, default=8)
    p.add_argument("--out", type=Path)
    p.add_argument("--collect-only", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.extractor == "llm" and not (args.config or args.base_url or args.standin):
        p.error("--extractor llm needs --config, --base-url or --standin")
    args.gold = args.gold.resolve()  # the baseline's child process runs from outside the checkout
    gold = load_gold(args.gold)[: args.limit]
    if args.collect_only:
        args.collect_only.write_text(json.dumps(collect(args, gold), default=str))
        return
    from graphmem.ontology import Ontology

    if args.config:  # score by the ontology the run used: its inverses and symmetric relations
        section = _config(args, ROOT, None).get("ontology", {})
        rels = relations_of(Ontology.load(section.get("ontology"), section.get("shapes")))
    else:
        rels = relations_of(Ontology.load())
    unknown = _unknown_relations(gold, rels.names)
    if unknown:  # scored under the wrong ontology every such triple is a miss: say so instead of a silent 0
        p.error(f"the gold set uses relations the ontology in use lacks ({', '.join(unknown[:6])}); "
                "pass the --config that names its ontology")
    name = args.extractor + ("-standin" if args.standin else "")
    collected = collect(args, gold)
    result = score(gold, collected["runs"], rels) | {"sent": _sum_sent(collected), "seconds": collected["seconds"],
                                                     "speed": collected.get("speed")}
    report(f"{name} @ {_commit()}", result, args.worst)
    gold_name = str(args.gold.relative_to(ROOT)) if args.gold.is_relative_to(ROOT) else str(args.gold)
    out: dict[str, Any] = {"benchmark": "extraction", "extractor": name, "commit": _commit(), "gold": gold_name,
                           "date": datetime.now(UTC).isoformat(timespec="seconds"),
                           "model": args.model if args.extractor == "llm" else None,
                           "granularity": args.granularity, "cpus": os.cpu_count(), **result}
    if args.standin:
        out["note"] = ("stand-in server: its model extracts only FACT lines, so precision/recall here are not "
                       "extraction quality; the token counts (what graphmem sends per conversation) are the result")
    if args.baseline:
        base, commit = run_baseline(args, args.gold)
        base_result = score(gold, base["runs"], rels) | {"sent": _sum_sent(base), "seconds": base["seconds"],
                                                         "speed": base.get("speed")}
        report(f"{name} @ {commit} (baseline)", base_result, args.worst)
        out["baseline"] = {"commit": commit, **base_result}
    path = args.out or RESULTS / f"extraction-{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
