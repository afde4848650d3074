"""Strip what running a notebook adds (outputs, execution counts, timings, the kernel's details), so
git holds only what its author wrote and a diff shows only their changes.

``python notebooks/strip.py [FILES…]`` rewrites the files in place (default: every notebook next to
this script; ``make notebooks-strip``); ``--check`` rewrites nothing and exits 1 naming the files
that are not stripped. ``tests/test_notebooks.py`` holds every committed notebook to this form.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import nbformat

HERE = Path(__file__).resolve().parent
KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}
RUN_METADATA = ("execution", "collapsed", "scrolled", "ExecuteTime")


def strip(nb: Any) -> Any:
    """The notebook without run artefacts (changed in place, and returned)."""
    for cell in nb.cells:
        for key in RUN_METADATA:
            cell.metadata.pop(key, None)
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    nb.metadata = nbformat.from_dict({"kernelspec": KERNELSPEC, "language_info": {"name": "python"}})
    return nb


def stripped_text(path: Path) -> str:
    """The file's text once stripped (what ``strip.py`` would write)."""
    nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    return nbformat.writes(strip(nb)) + "\n"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    files = [Path(a) for a in argv if a != "--check"] or sorted(HERE.glob("*.ipynb"))
    dirty = []
    for path in files:
        text = stripped_text(path)
        if path.read_text(encoding="utf-8") != text:
            dirty.append(path)
            if not check:
                path.write_text(text, encoding="utf-8")
    for path in dirty:
        print(f"{path}: {'not stripped' if check else 'stripped'}")
    return 1 if check and dirty else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
