"""Files a user names with ``--out``: checked before the work starts, written whole or not at all."""
from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable
from pathlib import Path

from .errors import InputError

_FIX = "give --out a file path in a folder you can write"
#: What :func:`write_table` writes, by extension (lower case); anything else is refused, since
#: a ``.json`` or ``.xlsx`` name holding CSV would mislead whoever opens it.
TABLE_EXTENSIONS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def output_file(path: str | os.PathLike, example: str = "out.csv") -> Path:
    """Check that ``path`` can take a file; raise :class:`InputError` if not.

    Called before a command does its work, so that a typo in ``--out`` costs nothing. Creates
    nothing: missing folders are made by the write itself, so a command that fails after the
    check leaves no empty folders behind.
    """
    p = Path(path)
    if p.is_dir():
        raise InputError(f"output {str(p)!r} is a folder", f"give a file name, e.g. {p / example}")
    check_outside_store(p)
    # The nearest folder that exists is the one that must take the new folders (or the file).
    base = p.parent
    while not base.exists() and base != base.parent:
        base = base.parent
    if not base.is_dir():
        raise InputError(f"cannot create the folder of output {str(p)!r}: {str(base)!r} is a file", _FIX)
    if not os.access(base, os.W_OK | os.X_OK):
        raise InputError(f"cannot write into {str(base)!r}: permission denied", _FIX)
    return p


def enclosing_store(path: str | os.PathLike) -> Path | None:
    """The history store whose folder ``path`` is or lies below (through symbolic links, and
    ".." before the store's name), or None."""
    from .store.schema import MARKER_FILE

    full = Path(path).resolve()
    return next((d for d in (full, *full.parents) if (d / MARKER_FILE).is_file()), None)


def check_outside_store(path: str | os.PathLike) -> None:
    """Raise :class:`InputError` when ``path`` (a file or folder to write) is a history store's
    folder or lies below one: a file written there could replace the store's marker or a part
    file, or be read as one."""
    d = enclosing_store(path)
    if d is not None:
        raise InputError(f"output {str(Path(path))!r} lies inside the history store {str(d)!r}",
                         "write outputs outside the store's folder; it holds only the store's own files")


def table_format(path: str | os.PathLike) -> str:
    """``"csv"`` or ``"parquet"`` for a table output's extension; :class:`InputError` for any other."""
    suffix = Path(path).suffix.lower()
    if suffix not in TABLE_EXTENSIONS:
        stem = Path(path).with_suffix("") if suffix else Path(path)
        raise InputError(f"output {str(path)!r} does not end in .csv, .parquet or .pq "
                         "(a table is written as CSV or Parquet only)",
                         f"name the file {stem}.csv or {stem}.parquet")
    return TABLE_EXTENSIONS[suffix]


def output_table(path: str | os.PathLike, example: str = "out.csv") -> Path:
    """:func:`output_file` for a table: also refuses an extension :func:`write_table` cannot honour."""
    p = output_file(path, example)  # first: "is a folder" says more than "no extension"
    table_format(p)
    return p


def output_page(path: str | os.PathLike) -> Path:
    """:func:`output_file` for an HTML page: a name that promises another format (``x.png``,
    ``x.pdf``) or none would get HTML under it, which nothing opens as what it claims to be."""
    p = output_file(path, "report.html")
    if p.suffix.lower() not in (".html", ".htm"):
        stem = p.with_suffix("") if p.suffix else p
        raise InputError(f"output {str(path)!r} does not end in .html (the report is one HTML page, "
                         "its figures embedded)", f"name the file {stem}.html")
    return p


def write_atomic(path: str | os.PathLike, write: Callable[[Path], object], example: str = "out.csv") -> Path:
    """Run ``write`` on a temporary name beside ``path``, then rename it over ``path``.

    A failed write removes the temporary file and leaves an earlier ``path`` as it was.
    """
    p = output_file(path, example)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the folder of output {str(p)!r}: {exc.strerror}", _FIX) from exc
    # a short name: ".{name}.tmp-{pid}" ran past the file system's 255 bytes for a legal
    # name of about 245, after the whole output was made
    tmp = p.with_name(f".sparkpredict-{os.getpid()}-{uuid.uuid4().hex[:12]}.tmp")
    try:
        write(tmp)
        os.replace(tmp, p)
    except OSError as exc:
        with contextlib.suppress(OSError):
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
    """Write a data frame as Parquet (``.parquet``, ``.pq``) or CSV (``.csv``), atomically."""
    parquet = table_format(path) == "parquet"
    return write_atomic(path, (lambda t: df.to_parquet(t, index=False)) if parquet
                        else (lambda t: df.to_csv(t, index=False)),
                        "out.parquet" if parquet else "out.csv")


__all__ = ["TABLE_EXTENSIONS", "check_outside_store", "output_file", "output_table", "table_format", "write_atomic",
           "write_table", "write_text"]
