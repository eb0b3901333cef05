"""Fitted models kept on disk between processes (``cache_dir()/<kind>/<key>.<suffix>``).

A CLI answers in a new process each time; refitting there costs seconds (and the scikit-learn
import). A cached fit is keyed by everything it was fitted from: the store's committed batches,
the code that fits it and the library versions, so new runs or a new sparkpredict fit again.
Entries are written whole (temporary file, then rename); a damaged or unwritable entry only
costs a refit.
"""
from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")


def code_stamp(*files: Path) -> list[str]:
    """Name, size and modification time of each file: changes whenever the code does."""
    from . import __version__

    return [__version__] + [f"{f.name}:{f.stat().st_size}:{f.stat().st_mtime_ns}" for f in files]


def make_key(*parts: Any) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:32]


def entry_path(kind: str, key: str, suffix: str) -> Path:
    from .config import cache_dir

    return cache_dir() / kind / f"{key}.{suffix}"


def read(kind: str, key: str, suffix: str, load: Callable[[IO[bytes]], T]) -> T | None:
    """``load(file)`` of the entry, or None when there is none or it cannot be loaded."""
    path = entry_path(kind, key, suffix)
    try:
        with open(path, "rb") as f:
            return load(f)
    except FileNotFoundError:
        return None
    except Exception as exc:  # damaged, foreign or from another version: refit  # noqa: BLE001
        log.debug("ignoring cache entry %s: %s", path, exc)
        return None


def write(kind: str, key: str, suffix: str, dump: Callable[[IO[bytes]], object]) -> None:
    """Write the entry with ``dump(file)``; a read-only home only costs the next process a refit."""
    path = entry_path(kind, key, suffix)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as f:
            dump(f)
        os.replace(tmp, path)
    except OSError as exc:
        log.debug("cannot write cache entry %s: %s", path, exc)
        try:
            tmp.unlink()
        except OSError:
            pass
