"""Fitted models kept on disk between processes (``cache_dir()/<kind>/<key>.<suffix>``).

A CLI answers in a new process each time; refitting there costs seconds (and the scikit-learn
import). A cached fit is keyed by everything it was fitted from: the store's committed batches,
the code that fits it (its files' contents, read once per process) and the library versions, so
new runs or a new sparkpredict fit again. Entries are written whole (temporary file, then
rename); a damaged or unwritable entry, or no cache folder at all (no home), only costs a refit.
Entries unused for :data:`KEEP_DAYS` days are removed as new ones are written.
"""
from __future__ import annotations

import contextlib
import hashlib
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")


#: An entry not read or written for this many days is removed by the next write of its kind.
KEEP_DAYS = 30
_STAMPS: dict[Path, str] = {}
_PRUNED: set[str] = set()


def code_stamp(*files: Path) -> list[str]:
    """The package version and a hash of each file's content, read the first time this process
    asks (a file edited later, in a long-lived process that imported the old code, must not
    key that old code's fits as the new code's). Content, not modification time: a copy that
    keeps times (rsync -a) of a same-sized edit looked unchanged."""
    from . import __version__

    out = [__version__]
    for f in files:
        if f not in _STAMPS:
            try:
                _STAMPS[f] = hashlib.sha256(f.read_bytes()).hexdigest()[:16]
            except OSError:  # a file not there (a zipped install): its name still keys the code
                _STAMPS[f] = "unreadable"
        out.append(f"{f.name}:{_STAMPS[f]}")
    return out


def fit_code_files() -> list[Path]:
    """The package's files whose code shapes a fitted model: the runs it is fitted on (the store's
    reader and schema, features, units, config) and the fit itself (models, fitting)."""
    pkg = Path(__file__).resolve().parent
    return [pkg / "fitting.py", pkg / "units.py", pkg / "config.py", pkg / "store" / "io.py",
            pkg / "store" / "schema.py", *sorted((pkg / "features").glob("*.py")),
            *sorted((pkg / "models").glob("*.py"))]


_FIT_CODE_HASH: list[str] = []


def fit_code_hash() -> str:
    """A short hash of :func:`fit_code_files`' contents (read once per process), or ``unknown``
    where they cannot be read (a zipped package: ``--py-files``), which hashes no code."""
    if not _FIT_CODE_HASH:
        files = fit_code_files()
        stamps = code_stamp(*files)
        models = [f for f in files if f.parent.name == "models"]
        readable = bool(models) and not any(x.endswith(":unreadable") for x in stamps)
        _FIT_CODE_HASH.append(make_key(stamps)[:12] if readable else "unknown")
    return _FIT_CODE_HASH[0]


_VERSIONS: dict[str, str] = {}


def library_versions(*names: str) -> list[str]:
    """``name==version`` of each installed distribution, read from its metadata (no import)
    once per process (about 8 ms each)."""
    from importlib import metadata

    for name in names:
        if name not in _VERSIONS:
            try:
                _VERSIONS[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                _VERSIONS[name] = "none"
    return [f"{n}=={_VERSIONS[n]}" for n in names]


def make_key(*parts: Any) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:32]


def entry_path(kind: str, key: str, suffix: str) -> Path:
    from .config import cache_dir

    return cache_dir() / kind / f"{key}.{suffix}"


def read(kind: str, key: str, suffix: str, load: Callable[[IO[bytes]], T], *, own_only: bool = False) -> T | None:
    """``load(file)`` of the entry, or None when there is none or it cannot be loaded.

    ``own_only``: load only a file this user owns that not everyone can write (a pickle runs
    code as it loads: a cache folder shared with others must not run theirs)."""
    try:
        path = entry_path(kind, key, suffix)
    except (RuntimeError, KeyError, OSError) as exc:  # no home to hold the cache: refit
        log.debug("no cache folder: %s", exc)
        return None
    try:
        with open(path, "rb") as f:
            if own_only and not _own(os.fstat(f.fileno())):
                log.warning("cache entry %s is not this user's own, or others can write it: not loaded", path)
                return None
            value = load(f)
        with contextlib.suppress(OSError):  # a read-only cache is still read
            os.utime(path)  # in use: kept by the pruning of old entries
        return value
    except FileNotFoundError:
        return None
    except Exception as exc:  # damaged, foreign or from another version: refit  # noqa: BLE001
        log.debug("ignoring cache entry %s: %s", path, exc)
        return None


def _own(st: os.stat_result) -> bool:
    getuid = getattr(os, "getuid", None)
    # group-writable is a umask of 002's everyday file (a group of one's own), so only "others"
    return (getuid is None or st.st_uid == getuid()) and not st.st_mode & 0o002


def write(kind: str, key: str, suffix: str, dump: Callable[[IO[bytes]], object]) -> None:
    """Write the entry with ``dump(file)``; a read-only home only costs the next process a refit."""
    try:
        path = entry_path(kind, key, suffix)
    except (RuntimeError, KeyError, OSError) as exc:  # no home to hold the cache
        log.debug("no cache folder: %s", exc)
        return
    _prune(path.parent, kind)
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


def _prune(folder: Path, kind: str) -> None:
    """Remove ``folder``'s entries unused for :data:`KEEP_DAYS` days, once per process and kind:
    every store version and job had an entry of its own, kept for ever."""
    import time

    if kind in _PRUNED:
        return
    _PRUNED.add(kind)
    old = time.time() - KEEP_DAYS * 86400
    try:
        for entry in os.scandir(folder):
            if entry.is_file() and entry.stat().st_mtime < old:
                os.unlink(entry.path)
    except OSError as exc:  # not there yet, or another process pruned first
        log.debug("cache %s not pruned: %s", folder, exc)
