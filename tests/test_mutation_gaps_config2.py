"""Behaviours of the settings (config.py) and the workloads' generators (workloads/generate.py)
that the second mutation audit found no test pinning (the first one's are in
test_mutation_gaps_config.py): each test here failed on a one-operator or one-statement change
of those modules that the rest of the suite let pass. No JVM, no timings."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from sparkpredict import config
from sparkpredict.errors import InputError, StoreError
from sparkpredict.workloads import generate as gen
from tests.test_mutation_gaps_config import _nine_byte_lines, _parts


def _nines(folder: Path, nbytes: int, seed: int) -> None:
    gen.write_sized(folder, _nine_byte_lines, nbytes, seed)


# ---- config.py ---------------------------------------------------------------------------------


@pytest.mark.parametrize("master", ["local-cluster[ 0 , 1 , 1024 ]", "local-cluster[2,\t0,1024]",
                                    "local-cluster[2, 1,0 ]"])
def test_a_local_cluster_of_nothing_is_said_with_blanks_around_its_numbers(master):
    """Spark's local-cluster pattern takes blanks around each number; so does the check."""
    what, fix = config.empty_local_master(master)
    assert what == "asks for workers with no executors, cores or memory"
    assert fix == "give local-cluster[N,C,MiB] with N, C and MiB at least 1"


@pytest.mark.parametrize("store, scheme", [("s3a:/bucket/h", "s3a"), ("my.fs-2+x:/p", "my.fs-2+x")])
def test_a_scheme_with_digits_or_punctuation_without_slashes_is_said(store, scheme):
    """A URI scheme is a letter then letters, digits, "+", "." or "-" (RFC 3986)."""
    with pytest.raises(StoreError) as e:
        config.resolve_store(store)
    assert f"names the file system {scheme}: without '//'" in e.value.message


def test_a_cache_folder_the_probe_passes_but_mkdir_refuses_is_said(tmp_path):
    """The probe writes where the first missing folder would go, which a name too long for the
    file system passes: mkdir's own refusal is the error, with its reason and nothing else."""
    path = tmp_path / ("x" * 300) / "jars"
    with pytest.raises(InputError) as e:
        config.make_cache_dir(path, fix="shorter")
    assert e.value.message == f"cannot write the cache '{path}': File name too long"
    assert e.value.fix == "shorter"
    assert list(tmp_path.iterdir()) == []


# ---- workloads/generate.py: the cache ----------------------------------------------------------


def test_a_folder_at_the_data_sets_name_without_a_manifest_is_refused_before_generating(tmp_path):
    """Only a manifest makes a data set complete: a folder of that name holding files and no
    manifest (a copy cut short) is neither returned as the data nor replaced. It was found only
    once the whole data set had been generated, when the rename onto it failed, and said as
    "cannot write the cache '...': Directory not empty" with a fix to choose another cache."""
    final = gen.cached_path("nines", 100, 0, tmp_path)
    final.mkdir()
    (final / "part-00000.txt").write_bytes(b"half\n")
    calls = []
    with pytest.raises(InputError) as e:
        gen.ensure_data("nines", lambda *a: calls.append(a), 100, 0, tmp_path)
    assert e.value.message == f"the cache holds '{final}' without its _manifest.json: not a complete data set"
    assert e.value.fix == "remove it; the data set is generated again"
    assert calls == []  # said before generating
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nines-s0-100B"]
    assert _parts(final) == [b"half\n"]
    gen.cached_path("other", 100, 0, tmp_path).write_text("x")  # a file at the name: the same
    with pytest.raises(InputError, match="without its _manifest.json"):
        gen.ensure_data("other", _nines, 100, 0, tmp_path)


def test_an_empty_folder_at_the_data_sets_name_is_filled(tmp_path):
    """An empty folder of that name (made by hand, or left by a cleanup) holds nothing to lose:
    the data set is renamed onto it."""
    final = gen.cached_path("nines", 100, 0, tmp_path)
    final.mkdir()
    assert gen.ensure_data("nines", _nines, 100, 0, tmp_path) == final
    assert gen.manifest(final)["bytes"] == 99


def _aged_folder(d: Path, name: str) -> Path:
    """``d`` made with one file ``name``, both last modified in 1970 (long stale)."""
    d.mkdir()
    (d / name).write_text("x")
    for p in (d / name, d):
        os.utime(p, (1_000_000.0, 1_000_000.0))
    return d


def test_a_link_named_as_a_generation_folder_is_left_alone(tmp_path):
    """remove_stale removes folders, not what a link points at: a link named as ours (a cache
    folder someone linked in) is neither followed nor reported removed."""
    target = _aged_folder(tmp_path / "elsewhere", "keep.txt")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / ".sort-s0-1000B.0123abcd.tmp").symlink_to(target, target_is_directory=True)
    assert gen.remove_stale(cache, max_age_s=50) == []
    assert (target / "keep.txt").is_file() and (cache / ".sort-s0-1000B.0123abcd.tmp").is_symlink()


def test_a_generation_folder_whose_file_goes_while_walked_is_not_stale(tmp_path, monkeypatch):
    """A file removed while its folder's age is read means a generator is alive there (it
    renames or cleans up): the folder is young, not removed."""
    d = _aged_folder(tmp_path / ".sort-s0-1000B.0123abcd.tmp", "part-00000.txt")
    real_stat = os.stat

    def stat(path, *a, **k):
        if str(path).endswith("part-00000.txt"):
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return real_stat(path, *a, **k)

    monkeypatch.setattr(gen.os, "stat", stat)
    assert gen._newest_mtime(d) == float("inf")
    assert gen.remove_stale(tmp_path, max_age_s=50) == []
    monkeypatch.undo()
    assert d.is_dir()


def test_a_generation_folder_gone_before_its_age_is_read_is_skipped(tmp_path, monkeypatch):
    """Its generator finished (renamed it) between the listing and the look: nothing to remove,
    and the other folders are still looked at."""
    old = 1_000_000.0
    gone, stale = tmp_path / ".sort-s0-1000B.0123abcd.tmp", tmp_path / ".sort-s0-2000B.89abcdef.tmp"
    for d in (gone, stale):
        d.mkdir()
        os.utime(d, (old, old))
    real = gen._newest_mtime

    def newest(folder: Path) -> float:
        if folder == gone:
            raise FileNotFoundError(2, "No such file or directory", str(folder))
        return real(folder)

    monkeypatch.setattr(gen, "_newest_mtime", newest)
    assert gen.remove_stale(tmp_path, max_age_s=50) == [stale]
    assert gone.is_dir() and not stale.exists()


def _empty_then_nine(rng, index: int) -> bytes:
    """An empty line then a 10-byte one, three times: the only newline in a part's first 10
    bytes can be its very first byte."""
    return b"\n" + b"x" * 9 + b"\n" + b"\n" + b"y" * 9 + b"\n" + b"\n" + b"z" * 9 + b"\n"


def test_empty_lines_are_lines_too_at_a_parts_start_and_the_sizes_end(tmp_path, monkeypatch):
    """A part or the cut at the end that can keep only an empty line keeps it, rather than
    splitting the next line at the part's size or dropping the newline."""
    monkeypatch.setattr(gen, "PART_BYTES", 10)
    # 33 bytes of the first chunk, and 5 of the second: its first line (empty) fits, the next not
    assert gen.write_sized(tmp_path, _empty_then_nine, 38, 0) == 34
    assert _parts(tmp_path) == [b"\n", b"x" * 9 + b"\n", b"\n", b"y" * 9 + b"\n", b"\n", b"z" * 9 + b"\n", b"\n"]


def test_a_rename_refused_with_no_data_set_in_its_place_is_the_caches_error(tmp_path, monkeypatch):
    """Only another process's finished data set at the name excuses a failed rename; otherwise
    (the cache made read-only mid-way) nothing is returned as the data and nothing is left."""
    def refused(src, dst):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(gen.os, "rename", refused)
    with pytest.raises(InputError) as e:
        gen.ensure_data("nines", _nines, 100, 0, tmp_path)
    assert e.value.message == f"cannot write the cache '{tmp_path}': Permission denied"
    assert e.value.fix == gen.DATA_CACHE_FIX
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []


def test_a_text_chunk_whose_last_line_ends_on_its_last_word_keeps_that_line():
    """A chunk draws 80,000 words and keeps the lines that end within them: chunk 14 of seed 0
    has a line ending on word 80,000 exactly, which is kept (every word used)."""
    lines = gen.text_chunk(np.random.default_rng([0, 14]), 14).splitlines()
    assert sum(len(ln.split(b" ")) for ln in lines) == 4 * 20_000
