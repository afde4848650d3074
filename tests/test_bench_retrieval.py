"""Smoke test of ``bench/retrieval.py`` on a tiny synthetic file: the harness runs end to end, the
metric is the README's, a mode the search cannot serve (graph without extraction) is reported as
``null``, never faked, and the same mode is measured once rule extraction gives it a graph."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "retrieval.py"
pytestmark = pytest.mark.slow  # a child process per run, rule extraction included

DOCS = [
    ("D1", "Alice adopted a grey cat named Pixel.", "Alice", "S1", "1:56 pm on 8 May, 2023"),
    ("D2", "The weather in Lisbon was sunny all week.", "Bob", "S1", "1:56 pm on 8 May, 2023"),
    ("D3", "Bob started learning the cello in June.", "Bob", "S2", "2023/05/20 (Sat) 01:44"),
    ("D4", "Alice works as a nurse at the city hospital.", "Alice", "S2", "2023/05/20 (Sat) 01:44"),
]


def _write(path: Path, level: str) -> Path:
    data = {"name": "tiny", "source": "synthetic", "gold_level": level, "collections": [{
        "id": "c1",
        "docs": [{"id": i, "text": t, "speaker": s, "group": g, "time": tm} for i, t, s, g, tm in DOCS],
        "queries": [
            {"id": "q1", "text": "What is the name of Alice's cat?", "gold": ["D1" if level == "doc" else "S1"],
             "category": "single"},
            {"id": "q2", "text": "Which instrument is Bob learning, the cello?",
             "gold": ["D3" if level == "doc" else "S2"], "category": "multi"},
        ]}]}
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump(data, fh)
    return path


def _run(tmp_path: Path, level: str, extract: str) -> dict:
    src = _write(tmp_path / f"tiny-{level}.json.gz", level)
    out = tmp_path / f"out-{level}-{extract}.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH), str(src), "--backend", "embedded", "--embedder", "hashing",
         "--extract", extract, "--k", "1,3", "--out", str(out)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        # a bare environment, but the same graphmem as this session (a worktree's, not the editable install's)
        env={"GRAPHMEM_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin",
             **{k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}},
    )
    assert proc.returncode == 0, proc.stderr
    assert "mode" in proc.stdout
    return json.loads(out.read_text())


def test_doc_level_recall_and_shape(tmp_path: Path) -> None:
    res = _run(tmp_path, "doc", "none")
    assert set(res) >= {"recall", "latency_ms", "ingest_s", "config"}
    for mode in ("vector", "fulltext", "hybrid", "hybrid_minmax", "hybrid_rrf", "no_graph", "mem0"):
        rec = res["recall"][mode]
        assert set(rec) == {"all@1", "all@3", "single@1", "single@3", "multi@1", "multi@3"}
        assert all(0.0 <= v <= 1.0 for v in rec.values())
        assert rec["all@1"] <= rec["all@3"]
        assert res["latency_ms"][mode]["p50"] <= res["latency_ms"][mode]["p95"]
    assert res["recall"]["fulltext"]["all@3"] == 1.0  # both questions share rare words with their doc
    assert res["config"]["memories"] == 4 and res["config"]["queries"] == 2
    # without extraction there is no graph to walk: the mode is reported unavailable, not faked
    assert res["recall"]["graph"] is None and res["latency_ms"]["graph"] is None
    assert res["config"]["unavailable"] == ["graph"]
    assert res["recall"]["no_graph"] == res["recall"]["hybrid"]  # no graph: hybrid fuses what no_graph does
    # at a token budget: the four short docs fit in 2,000 tokens, so every gold doc is found
    budget = res["recall_at_token_budget"]
    assert set(budget) == {"vector", "fulltext", "hybrid", "hybrid_minmax", "hybrid_rrf", "no_graph"}
    assert budget["hybrid"]["all@2000"] == budget["hybrid"]["all@7000"] == 1.0
    assert budget["hybrid"]["memories_median"] == {"2000": 4, "7000": 4}


def test_group_level_with_rule_extraction(tmp_path: Path) -> None:
    res = _run(tmp_path, "group", "rules")
    assert res["config"]["gold_level"] == "group"
    assert res["config"]["memories"] >= 4
    assert res["recall"]["fulltext"]["all@3"] == 1.0  # only two groups exist: both fit in the top 3
    # extracted entities give search graph scores: the graph mode is measured like the others
    assert res["config"]["unavailable"] == []
    graph = res["recall"]["graph"]
    assert set(graph) == {"all@1", "all@3", "single@1", "single@3", "multi@1", "multi@3"}
    assert all(0.0 <= v <= 1.0 for v in graph.values()) and 0.0 < graph["all@1"] <= graph["all@3"]
    assert res["latency_ms"]["graph"]["p50"] <= res["latency_ms"]["graph"]["p95"]
