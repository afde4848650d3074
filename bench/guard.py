"""Guard benchmark: validating a 12-triple batch against a store of 10k triples, three ways, in one run.

    python bench/guard.py [--stored 10000] [--entities 3000] [--batch 12] [--runs 300] [--naive-runs 10]
                          [--ontology PATH …] [--shapes PATH …] [--out bench/results/guard.json]

The store is simulated: ``--stored`` triples among ``--entities`` typed entities, generated from the
ontology's domains and ranges (one value per subject for properties that are functional or limited
to one value by a shape), so most of it is valid. Each batch mixes stored and new entities.

1. **guard**: ``Guard.check(batch, types, context)`` end to end, where the context is what the store
   hands over: the stored triples touching the batch's entities, and the types of every entity in
   them (selecting the context is the store's query and is not timed). Data graph = ontology subclass
   closure + those types and triples + the batch; focus nodes = the batch's entities. Also run with
   ``optimize=False`` (every shape, the whole context) to show what the pruning saves.
2. **whole graph + focus**: the whole store (all types and triples, subclass closure merged once)
   plus the batch, with the same focus nodes; only validation is timed.
3. **naive**: the same whole graph, no focus nodes (every target in the store is validated); only
   validation is timed, building the graph is not, which favours this baseline.

Prints a table and writes JSON (``--out``). Target: guard p50 <= 15 ms on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import random
import statistics
import sys
import time
from collections import defaultdict
from datetime import date, timedelta
from importlib.metadata import version
from pathlib import Path
from typing import Any

from rdflib import Graph, URIRef
from rdflib.namespace import RDF, SH, XSD

from graphmem.ontology import Guard, Ontology, Triple, TypedLiteral, entity_iri
from graphmem.ontology.validation import compile_shapes, run_shacl

_DATATYPE_VALUES = {
    str(XSD.date): lambda rng: (date(1950, 1, 1) + timedelta(days=rng.randrange(27_000))).isoformat(),
    str(XSD.integer): lambda rng: str(rng.randrange(1, 100)),
    str(XSD.nonNegativeInteger): lambda rng: str(rng.randrange(1, 100)),
    str(XSD.gYear): lambda rng: str(rng.randrange(1950, 2025)),
}


class Store:
    """A simulated store: typed entities and triples, indexed by entity like the real one."""

    def __init__(self, onto: Ontology, n_entities: int, n_triples: int, seed: int) -> None:
        self.onto = onto
        self.rng = random.Random(seed)
        classes = sorted(onto.classes)
        self.types: dict[str, str] = {f"e{i}": self.rng.choice(classes) for i in range(n_entities)}
        by_class: dict[str, list[str]] = defaultdict(list)
        for key, cls in self.types.items():
            for c in (cls, *onto.classes[cls].ancestors):
                by_class[c].append(key)
        single = self._single_valued()
        self.rules: list[tuple[str, list[str], list[str] | str]] = []
        for rel in onto.relations.values():
            subjects = self._members(by_class, rel.domain)
            if rel.kind == "object":
                objects = self._members(by_class, rel.range)
                if subjects and objects:
                    self.rules.append((rel.iri, subjects, objects))
            elif len(rel.range) == 1 and rel.range[0] in _DATATYPE_VALUES and subjects:
                self.rules.append((rel.iri, subjects, rel.range[0]))
        self.triples: list[Triple] = []
        seen: set[tuple[str, str]] = set()
        while len(self.triples) < n_triples:
            t = self.make_triple()
            if t.relation in single and (t.subject, t.relation) in seen:
                continue
            seen.add((t.subject, t.relation))
            self.triples.append(t)
        self.by_entity: dict[str, list[Triple]] = defaultdict(list)
        for t in self.triples:
            self.by_entity[t.subject].append(t)
            if isinstance(t.object, str):
                self.by_entity[t.object].append(t)
        self.single = single

    def _single_valued(self) -> set[str]:
        sg = self.onto.shapes_graph
        out = {r.iri for r in self.onto.relations.values() if r.functional}
        for shape, count in sg.subject_objects(SH.maxCount):
            path = sg.value(shape, SH.path)
            if isinstance(path, URIRef) and str(count) == "1":
                out.add(str(path))
        return out

    @staticmethod
    def _members(by_class: dict[str, list[str]], classes: tuple[str, ...]) -> list[str]:
        if not classes:
            return sorted({k for members in by_class.values() for k in members})
        sets = [set(by_class.get(c, ())) for c in classes]
        return sorted(set.intersection(*sets))

    def make_triple(self, subject: str | None = None) -> Triple:
        rel, subjects, objects = self.rng.choice(self.rules)
        s = subject if subject is not None else self.rng.choice(subjects)
        if isinstance(objects, str):
            return Triple(s, rel, TypedLiteral(_DATATYPE_VALUES[objects](self.rng), objects))
        return Triple(s, rel, self.rng.choice(objects))

    def batch(self, size: int, n_new: int) -> tuple[list[Triple], dict[str, str]]:
        """``size`` new triples; ``n_new`` of them have a new subject typed like an existing one."""
        triples: list[Triple] = []
        new_types: dict[str, str] = {}
        for i in range(size):
            t = self.make_triple()
            if i < n_new:
                key = f"new{self.rng.randrange(10**9)}"
                new_types[key] = self.types[t.subject]
                t = Triple(key, t.relation, t.object)
            elif t.relation in self.single and any(
                s.relation == t.relation for s in self.by_entity.get(t.subject, ()) if s.subject == t.subject
            ):
                continue  # would be a second value: conflict resolution territory, not this benchmark
            triples.append(t)
        while len(triples) < size:
            triples.append(self.make_triple())
        return triples, new_types

    def context(self, batch: list[Triple], new_types: dict[str, str]) -> tuple[list[Triple], dict[str, str]]:
        """What the store would hand the guard: stored triples touching the batch's entities, and types."""
        keys = {t.subject for t in batch} | {t.object for t in batch if isinstance(t.object, str)}
        ctx: dict[int, Triple] = {}
        for k in keys:
            for t in self.by_entity.get(k, ()):
                ctx[id(t)] = t
        context = list(ctx.values())
        involved = keys | {t.subject for t in context} | {t.object for t in context if isinstance(t.object, str)}
        types = {k: self.types[k] for k in involved if k in self.types}
        types.update(new_types)
        return context, types

    def whole_graph(self) -> Graph:
        g = Graph()
        for axiom in self.onto.tbox:
            g.add(axiom)
        for key, cls in self.types.items():
            g.add((entity_iri(key), RDF.type, URIRef(cls)))
        for t in self.triples:
            obj = entity_iri(t.object) if isinstance(t.object, str) else _literal(t.object)
            g.add((entity_iri(t.subject), URIRef(t.relation), obj))
        return g


def _literal(value: Any) -> Any:
    from rdflib import Literal

    return Literal(value.value, datatype=URIRef(value.datatype))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def summary(times: list[float], **extra: Any) -> dict[str, Any]:
    return {"runs": len(times), "p50_ms": round(statistics.median(times), 2),
            "p95_ms": round(percentile(times, 0.95), 2), "mean_ms": round(statistics.fmean(times), 2), **extra}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stored", type=int, default=10_000)
    ap.add_argument("--entities", type=int, default=3_000)
    ap.add_argument("--batch", type=int, default=12)
    ap.add_argument("--new", type=int, default=4, help="triples per batch whose subject is a new entity")
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--full-runs", type=int, default=100, help="runs of the guard without shape/context pruning")
    ap.add_argument("--focus-runs", type=int, default=20)
    ap.add_argument("--naive-runs", type=int, default=10)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--ontology", action="append", type=Path)
    ap.add_argument("--shapes", action="append", type=Path)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "guard.json")
    args = ap.parse_args(argv)
    logging.getLogger("graphmem.ontology.shacl").setLevel(logging.ERROR)

    t0 = time.perf_counter()
    onto = Ontology.load(args.ontology, args.shapes)
    load_s = time.perf_counter() - t0
    guard = Guard(onto)
    store = Store(onto, args.entities, args.stored, args.seed)
    print(f"ontology: {len(onto.classes)} classes, {len(onto.relations)} relations, "
          f"{len(onto.shapes_graph)} shape triples (compiled in {load_s:.2f} s); store: {len(store.triples):,} "
          f"triples among {len(store.types):,} entities", flush=True)

    batches = [store.batch(args.batch, args.new) for _ in range(args.runs + 10)]
    inputs = [(b, *store.context(b, new)) for b, new in batches]

    for b, ctx, types in inputs[:10]:  # warm-up
        guard.check(b, types, ctx)
    guard_ms: list[float] = []
    ctx_sizes: list[int] = []
    data_sizes: list[int] = []
    rejected = 0
    for b, ctx, types in inputs[10:]:
        start = time.perf_counter()
        report = guard.check(b, types, ctx)
        guard_ms.append((time.perf_counter() - start) * 1000)
        ctx_sizes.append(len(ctx))
        data_sizes.append(report.data_triples)
        rejected += len(report.rejected)
    print(f"guard: {len(guard_ms)} runs done", flush=True)
    full_guard = Guard(onto, optimize=False)
    full_ms: list[float] = []
    for b, ctx, types in inputs[10:10 + args.full_runs]:
        start = time.perf_counter()
        full_guard.check(b, types, ctx)
        full_ms.append((time.perf_counter() - start) * 1000)
    print(f"guard without pruning: {len(full_ms)} runs done", flush=True)

    whole = store.whole_graph()
    shapes = compile_shapes(onto.shapes_graph)

    def additions(batch: list[Triple], new_types: dict[str, str]) -> tuple[list[Any], list[URIRef]]:
        added: list[Any] = [(entity_iri(key), RDF.type, URIRef(cls)) for key, cls in new_types.items()]
        for t in batch:
            rel = onto.resolve_relation(t.relation) or t.relation
            obj = entity_iri(t.object) if isinstance(t.object, str) else _literal(t.object)
            added.append((entity_iri(t.subject), URIRef(rel), obj))
        focus = sorted({entity_iri(t.subject) for t in batch}
                       | {entity_iri(t.object) for t in batch if isinstance(t.object, str)})
        return added, focus

    def timed(runs: int, use_focus: bool) -> list[float]:
        """The batch is added to the whole store graph, validated, and taken out again."""
        out = []
        for b, new in batches[:runs]:
            added, focus = additions(b, new)
            fresh = [t for t in added if t not in whole]
            for t in fresh:
                whole.add(t)
            start = time.perf_counter()
            run_shacl(whole, shapes, focus_nodes=focus if use_focus else None)
            out.append((time.perf_counter() - start) * 1000)
            for t in fresh:
                whole.remove(t)
        return out

    focus_ms = timed(args.focus_runs, True)
    print(f"whole graph + focus: {len(focus_ms)} runs done", flush=True)
    naive_ms = timed(args.naive_runs, False)
    print(f"naive: {len(naive_ms)} runs done", flush=True)

    g_sum, n_sum = summary(guard_ms, context_triples_mean=round(statistics.fmean(ctx_sizes), 1),
                           data_graph_triples_mean=round(statistics.fmean(data_sizes), 1),
                           rejected_triples=rejected, optimized=guard.optimized), summary(naive_ms)
    speedup = round(n_sum["p50_ms"] / g_sum["p50_ms"], 1)
    result: dict[str, Any] = {
        "config": {"stored_triples": len(store.triples), "entities": len(store.types), "batch": args.batch,
                   "new_entities_per_batch": args.new, "seed": args.seed,
                   "ontology": [str(s.path) for s in onto.sources], "shapes": [str(s.path) for s in onto.shape_sources],
                   "whole_graph_triples": len(whole)},
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0], "platform": platform.platform(),
                    "pyshacl": version("pyshacl"), "rdflib": version("rdflib")},
        "ontology_load_s": round(load_s, 3),
        "guard": g_sum,
        "guard_without_pruning": summary(full_ms),
        "whole_graph_focus": summary(focus_ms),
        "naive_whole_graph": n_sum,
        "speedup_naive_over_guard_p50": speedup,
        "target_p50_ms": 15,
        "target_met": g_sum["p50_ms"] <= 15,
    }

    rows = [("guard: context of the batch, focus nodes", g_sum),
            ("guard without shape/context pruning", result["guard_without_pruning"]),
            ("whole store graph + focus nodes", result["whole_graph_focus"]),
            ("naive: whole store graph, no focus", n_sum)]
    print()
    print(f"{args.batch}-triple batch vs {len(store.triples):,} stored triples ({len(store.types):,} entities)")
    print(f"{'method':44} {'runs':>5} {'p50 ms':>9} {'p95 ms':>9} {'mean ms':>9}")
    for name, r in rows:
        print(f"{name:44} {r['runs']:>5} {r['p50_ms']:>9.2f} {r['p95_ms']:>9.2f} {r['mean_ms']:>9.2f}")
    print(f"guard: {g_sum['context_triples_mean']} stored context triples handed over on average, "
          f"{g_sum['data_graph_triples_mean']} triples in the validated data graph")
    print(f"naive / guard (p50): {speedup}x; target guard p50 <= 15 ms: "
          f"{'met' if result['target_met'] else 'NOT met'}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
