"""Files a user names with ``--out``: checked before the work starts, written whole or not at all."""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from .errors import InputError

_FIX = "give --out a file path in a folder you can write"


def output_file(path: str | os.PathLike, example: str = "out.csv") -> Path:
    """Check that ``path`` can take a file and create its folder; raise :class:`InputError` if not.

    Called before a command does its work, so that a typo in ``--out`` costs nothing.
    """
    p = Path(path)
    if p.is_dir():
        raise InputError(f"output {str(p)!r} is a folder", f"give a file name, e.g. {p / example}")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the folder of output {str(p)!r}: {exc.strerror}", _FIX) from exc
    if not os.access(p.parent, os.W_OK):
        raise InputError(f"cannot write into {str(p.parent)!r}: permission denied", _FIX)
    return p


def write_atomic(path: str | os.PathLike, write: Callable[[Path], object], example: str = "out.csv") -> Path:
    """Run ``write`` on a temporary name beside ``path``, then rename it over ``path``.

    A failed write removes the temporary file and leaves an earlier ``path`` as it was.
    """
    p = output_file(path, example)
    tmp = p.with_name(f".{p.name}.tmp-{os.getpid()}")
    try:
        write(tmp)
        os.replace(tmp, p)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InputError(f"cannot write {str(p)!r}: {exc.strerror or exc}",
                         "check the free space and permissions of its folder") from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return p


def write_text(path: str | os.PathLike, text: str, example: str = "out.txt") -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"), example)


def write_table(df, path: str | os.PathLike) -> Path:
    """Write a data frame as Parquet (``.parquet``, ``.pq``) or else CSV, atomically."""
    parquet = str(path).endswith((".parquet", ".pq"))
    return write_atomic(path, (lambda t: df.to_parquet(t, index=False)) if parquet
                        else (lambda t: df.to_csv(t, index=False)),
                        "out.parquet" if parquet else "out.csv")


__all__ = ["output_file", "write_atomic", "write_table", "write_text"]
