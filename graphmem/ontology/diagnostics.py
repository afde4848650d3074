"""Problems found in ontology and shapes files, each pointing at a file and line."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Problem:
    """One finding of ``graphmem ontology check`` (or of loading): ``file:line: severity: message``."""

    severity: Severity
    code: str
    """Stable identifier for programs, e.g. ``parse-error``, ``unknown-sh-term``, ``missing-class``."""
    message: str
    path: Path | None = None
    line: int | None = None

    @property
    def where(self) -> str:
        if self.path is None:
            return "<ontology>"
        try:
            shown = os.path.relpath(self.path)
        except ValueError:  # another drive on Windows
            shown = str(self.path)
        if shown.startswith(".." + os.sep + ".."):
            shown = str(self.path)
        return f"{shown}:{self.line or 1}"

    def __str__(self) -> str:
        return f"{self.where}: {self.severity}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {"severity": self.severity, "code": self.code, "message": self.message,
                "path": str(self.path) if self.path else None, "line": self.line}


def sort_problems(problems: list[Problem]) -> list[Problem]:
    return sorted(set(problems), key=lambda p: (str(p.path or ""), p.line or 0, p.severity, p.message))
