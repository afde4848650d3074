"""A deterministic "model" for the stand-in server: it extracts exactly the facts a text spells out.

Lines of the chunk written as ``FACT <source>:<Type> <relation> <target>[:<Type>] [@<valid-from>]``
become one memory, the typed entities and one triple each; everything else is ignored. Tests and
benchmarks use it to drive the whole LLM path (HTTP, JSON schema, parsing, guard) with known answers.
"""

from __future__ import annotations

import json
import re
from typing import Any

FACT = re.compile(
    r"FACT (?P<s>[^:\n]+):(?P<st>\w+) (?P<r>\w+) (?P<o>[^:\n]+?)(?::(?P<ot>\w+))?(?: @(?P<t>\S+))?$", re.MULTILINE
)


def fact_responder(body: dict[str, Any]) -> str:
    """Answer a chat-completions request body with the extraction of its FACT lines."""
    memories: list[dict[str, Any]] = []
    entities: dict[str, dict[str, Any]] = {}
    triples: list[dict[str, Any]] = []
    chunk = next((m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "user"), "")
    for m in FACT.finditer(str(chunk)):  # the chunk is the first user turn; later ones are corrections
        memories.append({"text": f"{m['s']} {m['r']} {m['o']}", "memory_type": "semantic", "event_time": None,
                         "attributed_to": None, "replaces": None})
        entities[m["s"]] = {"name": m["s"], "type": m["st"], "aliases": [], "existing": None}
        if m["ot"]:
            entities[m["o"]] = {"name": m["o"], "type": m["ot"], "aliases": [], "existing": None}
        triples.append({"source": m["s"], "relation": m["r"], "target": m["o"], "valid_from": m["t"],
                        "memory": len(memories) - 1})
    return json.dumps({"memories": memories, "entities": list(entities.values()), "triples": triples})
