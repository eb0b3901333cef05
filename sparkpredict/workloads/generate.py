"""Deterministic input generators sized in bytes, cached on disk.

Every generator writes text files (one record per line) in numbered parts of at most
:data:`PART_BYTES`, chunk by chunk. A chunk's content depends only on ``(seed, chunk index)``,
so the same seed and size always produce the same bytes, and a larger size starts with the
same records as a smaller one. The total is exactly the requested size minus the tail of the
last, cut line (less than one line), and the data set is written into a hidden folder and
renamed when complete, so an interrupted generation never leaves a half data set in the cache.

Only numpy and pyarrow are used: generating needs no JVM.
"""
from __future__ import annotations

import json
import logging
import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from ..errors import InputError

log = logging.getLogger(__name__)

#: Largest part file; Spark reads one part (or less) per task.
PART_BYTES = 1024 * 1024
#: Rows generated per chunk (before formatting); small enough to keep memory flat.
_CHUNK_ROWS = 20_000
MANIFEST = "_manifest.json"
#: What to do about a data cache that cannot be written: the folder is --cache's, or the default's.
DATA_CACHE_FIX = "give --cache a writable folder, or set SPARKPREDICT_CACHE to one (the default cache is under it)"

ChunkFn = Callable[[np.random.Generator, int], bytes]


def _csv_lines(columns: list[np.ndarray], decimals: int | None = None) -> bytes:
    """Format columns as comma-separated lines with pyarrow's C++ CSV writer (fast)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    arrays = []
    for c in columns:
        a = pa.array(c)
        if decimals is not None and pa.types.is_floating(a.type):
            a = pc.round(a, decimals)
        arrays.append(a)
    table = pa.Table.from_arrays(arrays, names=[f"c{i}" for i in range(len(arrays))])
    sink = pa.BufferOutputStream()
    pacsv.write_csv(table, sink, pacsv.WriteOptions(include_header=False, quoting_style="none"))
    return sink.getvalue().to_pybytes()


# ---- per-workload chunk generators (rng is seeded per chunk) --------------------------------

_VOCAB_SIZE = 20_000


def _vocabulary() -> np.ndarray:
    rng = np.random.default_rng(12345)  # fixed: the vocabulary is part of the format
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    lengths = rng.integers(2, 11, _VOCAB_SIZE)
    # One draw for all letters (the same stream as one rng.choice per word, 30x faster).
    flat = letters[rng.integers(0, 26, int(lengths.sum()))].tobytes().decode()
    ends = np.cumsum(lengths)
    return np.array([flat[a:b] for a, b in zip((ends - lengths).tolist(), ends.tolist())])


_VOCAB: np.ndarray | None = None


def text_chunk(rng: np.random.Generator, index: int) -> bytes:
    """Lines of 4-16 words drawn from a Zipf-like vocabulary (HiBench's RandomTextWriter)."""
    global _VOCAB
    if _VOCAB is None:
        _VOCAB = _vocabulary()
    n_words = _CHUNK_ROWS * 4
    ranks = np.minimum(rng.zipf(1.3, n_words) - 1, _VOCAB_SIZE - 1)
    words = _VOCAB[ranks]
    per_line = rng.integers(4, 17, n_words // 8)
    ends = np.cumsum(per_line)
    ends = ends[ends <= n_words]
    # Interleave words with separators (newline after each line's last word): one C-level join.
    words = words[: ends[-1]]
    seps = np.full(len(words), " ", dtype=object)
    seps[ends - 1] = "\n"
    out = np.empty(2 * len(words), dtype=object)
    out[0::2], out[1::2] = words, seps
    return "".join(out.tolist()).encode()


_ALNUM = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", dtype=np.uint8)


def tera_chunk(rng: np.random.Generator, index: int) -> bytes:
    """TeraGen-like 100-byte records: a 10-byte random key, a space, a 88-byte payload, newline."""
    n = _CHUNK_ROWS
    rec = np.empty((n, 100), dtype=np.uint8)
    rec[:, :10] = _ALNUM[rng.integers(0, len(_ALNUM), (n, 10))]
    rec[:, 10] = ord(" ")
    # Payload: the row number in hex then filler, like TeraGen's row id + filler.
    rec[:, 11:99] = _ALNUM[(np.arange(88)[None, :] + (index * n + np.arange(n))[:, None]) % len(_ALNUM)]
    rec[:, 99] = ord("\n")
    return rec.tobytes()


_KMEANS_DIM = 8
_KMEANS_K = 5


def points_chunk(rng: np.random.Generator, index: int) -> bytes:
    """Points from a mixture of k Gaussians in 8 dimensions; centers fixed across chunks."""
    centers = np.random.default_rng(777).normal(0, 10, (_KMEANS_K, _KMEANS_DIM))
    lab = rng.integers(0, _KMEANS_K, _CHUNK_ROWS)
    x = centers[lab] + rng.normal(0, 1.5, (_CHUNK_ROWS, _KMEANS_DIM))
    return _csv_lines(list(x.T), decimals=4)


_LR_DIM = 10


def labeled_chunk(rng: np.random.Generator, index: int) -> bytes:
    """``label,x1..x10`` with label drawn from a logistic model of fixed weights."""
    w = np.random.default_rng(778).normal(0, 1, _LR_DIM)
    x = rng.normal(0, 1, (_CHUNK_ROWS, _LR_DIM))
    p = 1 / (1 + np.exp(-(x @ w)))
    y = (rng.random(_CHUNK_ROWS) < p).astype(np.int64)
    return _csv_lines([y, *x.T], decimals=4)


_GRAPH_NODES_PER_CHUNK = 5_000


def edges_chunk(rng: np.random.Generator, index: int) -> bytes:
    """``src,dst`` edges; node ids grow with the data so the graph's size scales with bytes.

    Destinations are skewed (power law over already-seen nodes), like web graphs.
    """
    hi = (index + 1) * _GRAPH_NODES_PER_CHUNK
    src = rng.integers(0, hi, _CHUNK_ROWS)
    dst = (hi * rng.power(0.3, _CHUNK_ROWS)).astype(np.int64)
    return _csv_lines([src, dst])


def orders_chunk(rng: np.random.Generator, index: int, n_customers: int = 100_000) -> bytes:
    """``order_id,customer_id,amount,day`` rows; customers are Zipf-skewed (hot keys)."""
    n = _CHUNK_ROWS
    order_id = index * n + np.arange(n)
    customer = (rng.zipf(1.5, n) - 1) % n_customers
    amount = np.round(rng.gamma(2.0, 30.0, n), 2)
    day = rng.integers(0, 365, n)
    return _csv_lines([order_id, customer, amount, day])


def customers_lines(n_customers: int = 100_000) -> bytes:
    """The dimension table of the SQL workload: ``customer_id,segment,region`` (fixed)."""
    rng = np.random.default_rng(779)
    seg = np.array(["consumer", "corporate", "home_office", "small_business"])[rng.integers(0, 4, n_customers)]
    reg = np.array(["north", "south", "east", "west", "central"])[rng.integers(0, 5, n_customers)]
    return _csv_lines([np.arange(n_customers), seg, reg])


# ---- writing ---------------------------------------------------------------------------------

def _chunks(fn: ChunkFn, seed: int) -> Iterator[bytes]:
    index = 0
    while True:
        rng = np.random.default_rng([seed, index])
        yield fn(rng, index)
        index += 1


def write_sized(folder: Path, fn: ChunkFn, nbytes: int, seed: int) -> int:
    """Write ``fn``'s chunks into ``folder/part-NNNNN.txt`` files up to ``nbytes``; returns bytes.

    Lines are never split across parts or cut at the end, so every part is valid input.
    """
    folder.mkdir(parents=True, exist_ok=True)
    total, part, buf, done = 0, 0, bytearray(), False
    for chunk in _chunks(fn, seed):
        remaining = nbytes - total - len(buf)
        if len(chunk) >= remaining:
            cut = chunk.rfind(b"\n", 0, remaining)
            buf += chunk[: cut + 1]
            done = True
        else:
            buf += chunk
        while len(buf) >= PART_BYTES or (done and buf):
            if len(buf) > PART_BYTES:
                nl = buf.rfind(b"\n", 0, PART_BYTES)
                n = nl + 1 if nl >= 0 else PART_BYTES
            else:
                n = len(buf)
            (folder / f"part-{part:05d}.txt").write_bytes(bytes(buf[:n]))
            part += 1
            total += n
            del buf[:n]
        if done:
            return total
    raise AssertionError("unreachable")


def data_size(path: Path) -> int:
    """Bytes of the generated files under ``path`` (the manifest excluded)."""
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file() and p.name != MANIFEST)


def cached_path(name: str, nbytes: int, seed: int, cache_dir: Path) -> Path:
    """Where the data set ``name`` of ``nbytes`` for ``seed`` lies in ``cache_dir`` (complete
    when :func:`is_cached`)."""
    return Path(cache_dir) / f"{name}-s{seed}-{nbytes}B"


def is_cached(name: str, nbytes: int, seed: int, cache_dir: Path) -> bool:
    return (cached_path(name, nbytes, seed, cache_dir) / MANIFEST).is_file()


#: A hidden generation folder (:func:`ensure_data`) untouched this long was left by a generator
#: killed outright (SIGKILL, a power cut), which no ``finally`` outlives: a live one writes a
#: part file every fraction of a second.
STALE_TMP_S = 3600.0
_TMP_NAME = re.compile(r"\.[\w.-]+-s\d+-\d+B\.[0-9a-f]{8}\.tmp")


def _newest_mtime(folder: Path) -> float:
    newest = folder.stat().st_mtime
    for root, dirs, files in os.walk(folder):
        for n in dirs + files:
            try:
                newest = max(newest, os.stat(os.path.join(root, n)).st_mtime)
            except OSError:  # removed while walked: its generator is alive
                return float("inf")
    return newest


def remove_stale(cache_dir: Path, max_age_s: float = STALE_TMP_S) -> list[Path]:
    """Remove the hidden generation folders in ``cache_dir`` that nothing has written for
    ``max_age_s``; a younger one may be another process generating that data set right now.
    Returns what was removed."""
    import time

    removed: list[Path] = []
    try:
        entries = list(os.scandir(cache_dir))
    except OSError:  # no cache yet: nothing left behind either
        return removed
    cutoff = time.time() - max_age_s
    for e in entries:
        if not (_TMP_NAME.fullmatch(e.name) and e.is_dir(follow_symlinks=False)):
            continue
        try:
            stale = _newest_mtime(Path(e.path)) < cutoff
        except OSError:  # gone already
            continue
        if stale:
            shutil.rmtree(e.path, ignore_errors=True)
            log.info("removed %s, left by a generator that was killed", e.path)
            removed.append(Path(e.path))
    return removed


def ensure_data(name: str, writer: Callable[[Path, int, int], None], nbytes: int, seed: int,
                cache_dir: Path) -> Path:
    """Return the cached data set ``name`` of ``nbytes`` for ``seed``, generating it if absent.

    The folder is complete when its manifest exists: generation writes into a hidden sibling
    and renames it, so a crash mid-way never leaves a data set that looks complete. An
    interruption (Ctrl-C, SIGTERM taken as one) removes the hidden folder on the way out; one
    left by a killed generator is removed by a later generation (:func:`remove_stale`).

    Raises :class:`sparkpredict.errors.InputError` when ``cache_dir`` cannot be written, or holds
    something at the data set's name without its manifest (not a complete data set).
    """
    from ..config import cache_error, make_cache_dir

    cache_dir = Path(cache_dir)
    final = cached_path(name, nbytes, seed, cache_dir)
    if (final / MANIFEST).is_file():
        return final
    make_cache_dir(cache_dir, DATA_CACHE_FIX)
    if final.exists() and (not final.is_dir() or any(final.iterdir())):
        # (a copy cut short, a file): the rename onto it would fail only once the whole data set
        # was generated, said as "cannot write the cache: Directory not empty"
        raise InputError(f"the cache holds {str(final)!r} without its {MANIFEST}: not a complete data set",
                         "remove it; the data set is generated again")
    remove_stale(cache_dir)
    tmp = cache_dir / f".{final.name}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        writer(tmp, nbytes, seed)
        actual = data_size(tmp)
        (tmp / MANIFEST).write_text(json.dumps(
            {"workload": name, "seed": seed, "requested_bytes": nbytes, "bytes": actual}))
        try:
            os.rename(tmp, final)
        except OSError:
            # Another process generated the same data set first: theirs is identical.
            if not (final / MANIFEST).is_file():
                raise
    except OSError as exc:  # a full disk, a quota: said as the cache's, not as a traceback
        raise cache_error(cache_dir, exc.strerror or str(exc), DATA_CACHE_FIX) from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    log.info("generated %s (%d bytes) in %s", name, nbytes, final)
    return final


def manifest(path: Path) -> dict:
    return json.loads((Path(path) / MANIFEST).read_text())
