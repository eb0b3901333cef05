"""A store that an older sparkpredict compacts: its `store compact` merges only the tables it
knows, into a batch whose runs file says which batches it replaced, and its `store clean` then
removes those batches' files of its tables only. The rows of a newer table (``stage_scans``)
stay in the replaced batches' files: this version reads them there, its `store clean` keeps
them, and its `store compact` folds them into its own batch (real Parquet files; the older
code's writes emulated, and once run for real from its commit)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparkpredict import store
from sparkpredict.store import compact as C
from sparkpredict.store import io as store_io

HISTORY = Path(__file__).parent / "data" / "history"
REPO = Path(__file__).resolve().parent.parent
#: the tables of the sparkpredict before stage_scans (commit 0d620b6)
OLD_TABLES = ("runs", "executors", "stages", "tasks", "host_samples")
NEW = "stage_scans"


def _keyed(df: pd.DataFrame) -> pd.DataFrame:
    return df.sort_values(list(df.columns), kind="stable", na_position="first").reset_index(drop=True)


def _rows(st) -> dict[str, pd.DataFrame]:
    st = store.open(st.path)
    return {t: _keyed(st.read(t)) for t in ("runs", "stages", NEW)}


def _same(got: dict[str, pd.DataFrame], want: dict[str, pd.DataFrame]) -> None:
    for t, rows in want.items():
        pd.testing.assert_frame_equal(got[t], rows, obj=t)


def _batches(tmp_path: Path, n: int):
    """A store of ``n`` one-run batches as this version's ingest writes them: runs, stages and
    two stage_scans rows each."""
    src = store.open(HISTORY)
    runs, stages = src.read("runs"), src.read("stages")
    st = store.open(tmp_path / "st", create=True)
    for i in range(n):
        r = runs.iloc[[i % len(runs)]].copy()
        old, rid = r.run_id.iloc[0], f"app-{i:04d}"
        r["run_id"] = r["app_id"] = rid
        scans = pd.DataFrame({"run_id": [rid, rid], "stage_id": [0, 1], "stage_attempt_id": [0, 0],
                              "scan_files": [i, 100 + i]})
        st.append({"runs": r, "stages": stages[stages.run_id == old].assign(run_id=rid), NEW: scans})
    return st


def _files(st, table: str) -> dict[str, str]:
    return st._files(table)


def _old_compact(st, group: list[str], also: list[str] = ()) -> str:
    """What an older `store compact` writes for ``group``: its tables' rows in one batch, runs
    file last, whose footer names ``group`` and ``also`` (what its members replaced and is still
    there); no stage_scans file, and no tables key."""
    cid = store_io.compacted_id(group[-1])
    for table in OLD_TABLES[1:] + OLD_TABLES[:1]:  # runs last: the commit mark
        have = [(b, p) for b, p in sorted(_files(st, table).items()) if b in group]
        if not have:
            continue
        t = pa.concat_tables(st._read_parts(table, have, None, None))
        if table == "runs":
            t = t.replace_schema_metadata({store_io.SUPERSEDES_KEY: json.dumps(group + list(also)).encode()})
        d = Path(st.root) / table
        pq.write_table(t, d / f".part-{cid}.parquet.tmp")
        os.rename(d / f".part-{cid}.parquet.tmp", d / f"part-{cid}.parquet")
    return cid


def _old_clean(st, replaced: list[str]) -> None:
    """What an older `store clean` removes of replaced batches: its tables' files, runs first."""
    for table in OLD_TABLES:
        for b, p in _files(st, table).items():
            if b in replaced:
                os.remove(p)


def test_rows_an_older_compaction_left_behind_are_read_kept_and_folded(tmp_path):
    st = _batches(tmp_path, 6)
    want = _rows(st)
    assert len(want[NEW]) == 12
    batches = sorted(st.committed_batches())

    cid = _old_compact(st, batches)
    assert sorted(st.visible_marks()) == [cid]
    _same(_rows(st), want)

    _old_clean(st, batches)
    assert st.committed_batches() == {cid} and len(_files(st, NEW)) == 6
    _same(_rows(st), want)
    # this version's clean keeps the files that hold rows read
    assert st.orphans(0) == [] and st.replaced_files(0) == []
    assert st.remove_orphans(0) == [] and len(_files(st, NEW)) == 6
    # its compaction folds them into a batch of its own, alone as the older batch is
    r = C.compact(st, keep_s=0)
    assert (r.merged, r.written) == (1, 1)
    from sparkpredict.cli.store_cmd import compact_lines

    said = compact_lines(r)[0]  # it read "merged 1 batch (...) into 1; a reader opens 1 batch, not 1"
    assert "a reader opens 1 batch, as before: it rewrote what an older sparkpredict's `store compact` merged" in said
    assert "not 1" not in said
    (mine,) = st.visible_marks()
    assert mine != cid and mine in _files(st, NEW)
    _same(_rows(st), want)
    # then the older files are replaced as any: gone with the compaction's own leftovers
    assert list(_files(st, NEW)) == [mine]
    assert st.remove_orphans(0) == []
    _same(_rows(st), want)
    assert C.compact(st, keep_s=0).merged == 0  # nothing left to fold


def test_a_replaced_file_stays_for_readers_until_its_compaction_is_old(tmp_path):
    """The files a compaction folded are orphans now, yet a reader that listed the store before
    it reads them: they stay as long as the replaced batches' own files (--older-than)."""
    st = _batches(tmp_path, 3)
    want = _rows(st)
    batches = sorted(st.committed_batches())
    _old_compact(st, batches)
    _old_clean(st, batches)
    hour_ago = time.time() - 3600
    for p in _files(st, NEW).values():  # written long before, as such files are
        os.utime(p, (hour_ago, hour_ago))
    C.compact(st)
    assert st.orphans(600) == [] and st.replaced_files(600) == []
    folded = {f"part-{b}.parquet" for b in batches}
    assert folded <= {Path(p).name for p in st.replaced_files(0)}
    assert folded <= {Path(p).name for p in st.orphans(0)}
    _same(_rows(st), want)


def test_an_older_compaction_of_this_versions_compacted_batch_counts_no_row_twice(tmp_path):
    """This version compacts a, b into c1 (stage_scans file and all); an older one merges c1 and
    d, naming a and b too (still there); its clean removes the runs files of all four. a's and
    b's stage_scans rows are c1's: read once, from c1's file, whose footer says it replaced them."""
    st = _batches(tmp_path, 3)
    a, b, d = sorted(st.committed_batches())
    group = [a, b]
    tables = {t: st.read(t, form="arrow", all_rows=True, batches=lambda x: x in group)
              for t in ("runs", "stages", NEW)}
    c1 = st.append(tables, batch_id=store_io.compacted_id(b), replaces=group)
    want = _rows(st)

    c2 = _old_compact(st, [c1, d], also=[a, b])
    assert sorted(st.visible_marks()) == [c2]
    _same(_rows(st), want)
    _old_clean(st, [c1, d, a, b])
    assert st.committed_batches() == {c2} and sorted(_files(st, NEW)) == sorted([a, b, c1, d])
    _same(_rows(st), want)
    # a and b are copies of c1's rows: this clean may take them, never c1's or d's
    assert sorted(Path(p).name for p in st.remove_orphans(0)) == [f"part-{a}.parquet", f"part-{b}.parquet"]
    _same(_rows(st), want)
    C.compact(st, keep_s=0)
    st.remove_orphans(0)
    assert len(_files(st, NEW)) == 1
    _same(_rows(st), want)


def test_two_older_compactions_in_a_row_are_followed_while_the_first_runs_file_lasts(tmp_path):
    """An older compaction merges a, b into c1; once their runs files went, another merges c1
    and d into c2: c2 names c1 and d only. a's and b's rows are found through c1's runs file,
    which this version's clean keeps while it leads to them."""
    st = _batches(tmp_path, 3)
    want = _rows(st)
    a, b, d = sorted(st.committed_batches())
    c1 = _old_compact(st, [a, b])
    _old_clean(st, [a, b])
    c2 = _old_compact(st, [c1, d])
    assert sorted(st.visible_marks()) == [c2]
    _same(_rows(st), want)
    _old_clean(st, [d])  # an older clean removes d's; c1's runs file is all that links a and b
    replaced = st.replaced_files(0)
    assert replaced and not any(f"part-{c1}.parquet" in p and "/runs/" in p for p in replaced)
    st.remove_orphans(0)
    _same(_rows(st), want)
    C.compact(st, keep_s=0)
    st.remove_orphans(0)
    assert len(_files(st, NEW)) == 1 and len(st.committed_batches()) == 1
    _same(_rows(st), want)


def test_this_versions_compacted_batch_without_the_table_reads_nothing_elsewhere(tmp_path, monkeypatch):
    """Batches none of which had stage_scans rows: this version's compacted batch names the
    table among those it knew, so no replaced batch's file is looked for."""
    st = _batches(tmp_path, 4)
    for p in _files(st, NEW).values():
        os.remove(p)
    C.compact(st)
    (cid,) = st.visible_marks()
    assert cid not in _files(st, NEW)
    assert st.held(NEW).files == {}
    assert store.open(st.path).read(NEW).empty


def _older_commit(tmp_path) -> Path:
    """A folder holding the sparkpredict package of commit 0d620b6, the last before stage_scans
    (skipped where the repository's history is not at hand)."""
    old = tmp_path / "old"
    old.mkdir()
    try:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", "0d620b6", "sparkpredict"],
                                 capture_output=True, check=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        pytest.skip("the repository's history (commit 0d620b6) is not here")
    subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
    return old


def test_the_older_commits_own_compact_and_clean(tmp_path):
    """The sparkpredict of commit 0d620b6, the last before stage_scans, compacts and cleans a
    store this version wrote: not one stage_scans row is lost, before or after this version's
    compact and clean."""
    old = _older_commit(tmp_path)
    st = _batches(tmp_path, 5)
    want = _rows(st)

    def cli(code: Path, *args: str) -> None:
        env = dict(os.environ, PYTHONPATH=str(code))
        subprocess.run([sys.executable, "-m", "sparkpredict", "store", *args, "--store", st.path],
                       env=env, cwd=code, check=True, capture_output=True, timeout=120)

    cli(old, "compact", "--keep", "0")
    (cid,) = st.visible_marks()
    assert cid not in _files(st, NEW)  # the older code wrote no stage_scans file
    _same(_rows(st), want)
    cli(old, "clean", "--older-than", "0")
    _same(_rows(st), want)
    cli(REPO, "clean", "--older-than", "0")
    _same(_rows(st), want)
    cli(REPO, "compact", "--keep", "0")
    cli(REPO, "clean", "--older-than", "0")
    assert len(_files(st, NEW)) == 1
    _same(_rows(st), want)


def test_a_store_without_compacted_batches_looks_for_nothing_elsewhere(tmp_path, monkeypatch):
    """A read of a store of small batches only (the usual one) never asks held()."""
    st = _batches(tmp_path, 5)
    calls = []
    real = store_io.Store.held
    monkeypatch.setattr(store_io.Store, "held", lambda self, *a, **k: calls.append(1) or real(self, *a, **k))
    assert len(store.open(st.path).read(NEW)) == 10
    assert calls == []


def test_this_versions_compaction_takes_the_older_files_it_folded_as_it_takes_replaced_ones(tmp_path):
    """From a review of the upgrade: once this version's compaction had folded the stage_scans
    rows an older compaction left in the files of the batches it replaced, those files stayed
    until a `store clean` by hand: --keep 0 and the next compaction (which remove replaced
    batches' files, and run by themselves every 256 batches) left them, and a plain
    spark.read.parquet of stage_scans read 22 of 40 rows twice here. Real Parquet, the older
    commit's CLI (0d620b6) and this one's."""
    import pyarrow.dataset as ds

    old = _older_commit(tmp_path)

    def plain(st) -> int:  # what spark.read.parquet("STORE/stage_scans") counts
        return ds.dataset(Path(st.root) / NEW, format="parquet").count_rows()

    for keep in ("0", "10m"):
        st = _batches(tmp_path / keep, 5)
        want = _rows(st)

        def cli(code: Path, *args: str, st=st) -> None:
            env = dict(os.environ, PYTHONPATH=str(code))
            subprocess.run([sys.executable, "-m", "sparkpredict", "store", *args, "--store", st.path],
                           env=env, cwd=code, check=True, capture_output=True, timeout=120)

        cli(old, "compact", "--keep", "0")
        cli(old, "clean", "--older-than", "0")
        assert plain(st) == len(want[NEW]) == 10 and len(_files(st, NEW)) == 5
        cli(REPO, "compact", "--keep", keep)
        _same(_rows(st), want)
        if keep == "10m":  # kept for readers still reading them, then the next compaction's
            assert len(_files(st, NEW)) == 6 and st.replaced_files() == []
            hour_ago = time.time() - 3600
            for table in ("runs", "stages", NEW):
                for p in _files(st, table).values():
                    os.utime(p, (hour_ago, hour_ago))
            cli(REPO, "compact")
        assert len(_files(st, NEW)) == 1, keep
        assert plain(st) == len(want[NEW]), keep
        _same(_rows(st), want)
        assert st.orphans(0) == []


def test_a_damaged_file_an_older_compaction_left_names_the_fix_that_works(tmp_path, capsys):
    """From a review of the upgrade: a damaged stage_scans file that an older compaction left
    (its batch's runs file gone) got the fix of a batch of its own: move the batch's files, its
    runs file included, and ingest its logs again. It has no runs file, and its runs are in the
    compacted batch, so ingest skips their logs: the fix names moving the file alone, and what
    that leaves."""
    from sparkpredict.cli import main

    st = _batches(tmp_path, 4)
    want = _rows(st)
    batches = sorted(st.committed_batches())
    _old_compact(st, batches)
    _old_clean(st, batches)
    damaged = Path(_files(st, NEW)[batches[1]])
    damaged.write_bytes(damaged.read_bytes()[:100])
    capsys.readouterr()

    assert main(["store", "compact", "--store", st.path]) == 2
    err = capsys.readouterr().err
    assert f"fix: move this file (stage_scans/{damaged.name}) out of the store folder" in err, err
    assert "ingest those runs' event logs again" not in err and "Traceback" not in err
    assert len(list((Path(st.root) / "runs").glob("*.parquet"))) == 1  # nothing written

    damaged.rename(tmp_path / damaged.name)  # the fix, followed
    assert main(["store", "compact", "--store", st.path, "--keep", "0"]) == 0
    got = _rows(st)
    _same({t: got[t] for t in ("runs", "stages")}, {t: want[t] for t in ("runs", "stages")})
    lost = want[NEW][want[NEW].scan_files.isin([1, 101])]  # the damaged batch's rows (app-0001)
    assert len(got[NEW]) == len(want[NEW]) - len(lost) == 6
    # a damaged file of a batch of its own keeps its fix: the batch goes whole, its logs again
    st2 = _batches(tmp_path / "two", 2)
    own = Path(_files(st2, NEW)[min(st2.committed_batches())])
    own.write_bytes(own.read_bytes()[:100])
    assert main(["store", "compact", "--store", st2.path]) == 2
    assert "ingest those runs' event logs again" in capsys.readouterr().err
