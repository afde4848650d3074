"""The write path: turning messages and triples into memories and checked graph facts."""

from .planner import GraphPlan, GraphPlanner, PlanRequest, TripleInput, parse_triples

__all__ = ["GraphPlan", "GraphPlanner", "PlanRequest", "TripleInput", "parse_triples"]
