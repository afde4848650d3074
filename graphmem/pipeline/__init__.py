"""The write path: turning messages and triples into memories and checked graph facts."""

from .graph import GraphPlan, GraphPlanner, TripleInput, parse_triples

__all__ = ["GraphPlan", "GraphPlanner", "TripleInput", "parse_triples"]
