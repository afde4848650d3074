"""Store files only their owner can read: memories are personal data, and on a shared machine the
other accounts must not read them, whatever the process's umask."""

from __future__ import annotations

import os
from pathlib import Path

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


def make_private_dirs(folder: Path) -> None:
    """Create ``folder`` and its missing parents with mode 0700. A folder that already exists keeps
    its mode, without a warning: it is the user's (a home, a project folder), not graphmem's to change."""
    missing: list[Path] = []
    current = folder
    while not current.exists() and current.parent != current:
        missing.append(current)
        current = current.parent
    for path in reversed(missing):
        try:
            os.mkdir(path, PRIVATE_DIR)
        except FileExistsError:  # another process made it first (or a dangling link): not ours to chmod
            continue
        os.chmod(path, PRIVATE_DIR)  # mkdir's mode is filtered by the umask; this one is exact


def create_private_file(path: Path) -> None:
    """Create ``path`` empty with mode 0600 unless it exists. SQLite opens an empty file as a new
    database and gives its ``-wal``, ``-shm`` and ``-journal`` files the database file's mode, so the
    whole store follows. An existing file keeps its mode, like an existing folder."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    except FileExistsError:
        return
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, PRIVATE_FILE)  # exact, whatever the umask
    finally:
        os.close(fd)
