"""Every run records what its stages read (``run_inputs``), its input size declared or not: the
advice compares a declared size with it, where a declared run's ``runs`` row keeps the declared
size alone and the "mixes declared with measured" warning could only count the two kinds.

Live: the real listener jar and local[2] Spark read the same Parquet files three times, once
undeclared, once declared as read, once declared 10x; the event logs of the same applications
are ingested. The advice reads a copy of tests/data/history whose wordcount runs are relabelled
as measured (as the listener records a job nobody declares a size for), with a declared run of
the same job recorded live beside them.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from sparkpredict import store as store_mod
from sparkpredict.capture.eventlog_ingest import ingest_event_logs
from sparkpredict.store import compact as store_compact
from sparkpredict.store import schema as S

HISTORY = Path(__file__).parent / "data" / "history"
MIXED = "input size was declared"
FAR = "stages read ("


def _measured_history(path: Path) -> None:
    """A copy of the history whose wordcount runs were measured, as the listener records them."""
    shutil.copytree(HISTORY, path)
    st = store_mod.open(path)
    runs = st.runs()
    mine = runs[(runs.job == "wordcount") & (runs.status == "succeeded")]
    st.append({"runs": mine.assign(input_bytes_source="measured", updated_ms=mine.updated_ms + 10**6)})


def _read(spark, data: Path) -> None:
    row = spark.read.parquet(str(data)).selectExpr("sum(x) AS t", "count(*) AS n").collect()[0]
    assert row.n == 200_000


@pytest.fixture(scope="module")
def recorded(spark_app, tmp_path_factory) -> dict:
    """Three applications reading the same Parquet files, each with its event log: undeclared
    (its own store), declared as its stages read and declared 10x (each beside the measured
    wordcount history)."""
    root = tmp_path_factory.mktemp("run-inputs")
    data = root / "data"
    with spark_app(root / "writer-store", job="writer") as spark:
        df = spark.range(200_000).selectExpr("id", "id * 1.5 AS x", "concat('row-', id) AS s")
        df.repartition(3).write.parquet(str(data))
    out: dict = {"root": root}

    def app(name: str, declared: int | None, store: Path) -> Path:
        logs = root / f"{name}-logs"
        logs.mkdir()
        conf = {"spark.eventLog.enabled": "true", "spark.eventLog.dir": str(logs),
                "spark.eventLog.rolling.enabled": "false"}
        if declared is not None:
            conf["spark.sparkpredict.inputBytes"] = str(declared)
        with spark_app(store, job="wordcount", conf=conf) as spark:
            _read(spark, data)
        [log] = [p for p in logs.iterdir() if p.is_file()]
        return log

    out["plain_log"] = app("plain", None, root / "plain")
    plain = store_mod.open(root / "plain").runs().iloc[0]
    assert plain.input_bytes_source == "measured" and plain.input_bytes > 0
    out["read"] = read = int(plain.input_bytes)
    for name, declared in (("same", read), ("tenfold", 10 * read)):
        _measured_history(root / name)
        out[f"{name}_log"] = app(name, declared, root / name)
    return out


def _declared_run(path: Path) -> pd.Series:
    runs = store_mod.open(path).runs()
    [rid] = runs.loc[runs.input_bytes_source == "declared", "run_id"][runs.job == "wordcount"].tolist() or [None]
    return runs.set_index("run_id").loc[rid]


def _size_warnings(path: Path) -> list[str]:
    from sparkpredict import suggest_executors

    return [w for w in suggest_executors("wordcount", "16MB", store=str(path)).warnings
            if MIXED in w or FAR in w]


@pytest.mark.spark
def test_a_declared_run_records_what_its_stages_read_as_an_undeclared_one_does(recorded):
    root, read = recorded["root"], recorded["read"]
    plain = store_mod.open(root / "plain")
    [pid] = plain.runs()["run_id"].tolist()
    assert plain.measured_inputs() == {pid: read}  # the undeclared run: its input_bytes again
    for name, declared in (("same", read), ("tenfold", 10 * read)):
        st = store_mod.open(root / name)
        run = _declared_run(root / name)
        # the runs row keeps the declared size, as before; run_inputs holds what was read
        assert (run.input_bytes_source, int(run.input_bytes)) == ("declared", declared)
        inputs = st.read("run_inputs")
        assert inputs["run_id"].tolist() == [run.name]  # the history's runs, older, have none
        assert st.measured_inputs() == {run.name: read}
        # written in the batch of the final runs row: the same updated_ms
        assert int(inputs["updated_ms"].iloc[0]) == int(run.updated_ms)


@pytest.mark.spark
def test_ingest_of_the_same_logs_records_the_same_measured_input(recorded, tmp_path):
    read = recorded["read"]
    for name, declared in (("plain", None), ("same", read), ("tenfold", 10 * read)):
        out = tmp_path / name
        assert ingest_event_logs([recorded[f"{name}_log"]], out).files[0].outcome == "ingested"
        st = store_mod.open(out)
        run = st.runs().iloc[0]
        assert run.input_bytes_source == ("measured" if declared is None else "declared")
        assert int(run.input_bytes) == (read if declared is None else declared)
        inputs = st.read("run_inputs")
        assert inputs["measured_input_bytes"].tolist() == [read], name
        assert int(inputs["updated_ms"].iloc[0]) == int(run.updated_ms)


@pytest.mark.spark
def test_a_declared_size_its_stages_read_draws_no_mix_warning(recorded, tmp_path, monkeypatch):
    """`submit --executors auto` must declare: its first run of a job whose runs were measured
    drew "mixes 1 run whose input size was declared ... with 24 whose size was measured" on
    every advice, though the size declared was the bytes its stages read."""
    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "store"
    shutil.copytree(recorded["root"] / "same", path)
    assert _size_warnings(path) == []


@pytest.mark.spark
def test_a_declared_size_ten_times_what_its_stages_read_is_named_with_its_fix(recorded, tmp_path, monkeypatch,
                                                                              capsys):
    from sparkpredict.cli import main
    from sparkpredict.config import store_for_display
    from sparkpredict.units import format_bytes

    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "store"
    shutil.copytree(recorded["root"] / "tenfold", path)
    read = recorded["read"]
    rid = _declared_run(path).name
    [far] = _size_warnings(path)  # far off: not counted as a mix too, named once
    assert far.startswith("the input size declared for 1 run of wordcount is out of line with what its "
                          f"stages read ({rid} declared {format_bytes(10 * read)}, its stages read "
                          f"{format_bytes(read)}), 3x or more away from it, where the job's runs recorded "
                          "what their stages read: a mistyped size"), far
    # beside measured runs, the other reading: the files' size of a job that reads them twice
    assert "or the files' size beside measured runs that count every read of them" in far, far
    command = f"sparkpredict store edit {rid} --input-size {read} --store {store_for_display(str(path))}"
    assert f"`{command}`" in far
    # the command it names corrects the run, and the warning goes
    assert main(command.split()[1:]) == 0
    capsys.readouterr()
    assert int(_declared_run(path).input_bytes) == read
    assert store_mod.open(path).measured_inputs()[rid] == read  # an edit leaves what was read
    assert _size_warnings(path) == []


@pytest.mark.spark
def test_a_declared_size_a_little_off_is_a_mix_that_names_the_run(recorded, tmp_path, monkeypatch):
    """50 % more than its stages read: one input recorded as two sizes beside the measured runs,
    not the far-off mistake."""
    from sparkpredict.cli import main

    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "store"
    shutil.copytree(recorded["root"] / "same", path)
    read = recorded["read"]
    rid = _declared_run(path).name
    assert main(["store", "edit", rid, "--input-size", str(read * 3 // 2), "--store", str(path)]) == 0
    [mixed] = _size_warnings(path)
    assert "mixes 1 run whose input size was declared" in mixed and "with 24 whose size was measured" in mixed
    assert f"It differs by more than 10% from what its stages read ({rid} declared" in mixed
    assert "keeps no measured size" not in mixed


@pytest.mark.spark
def test_store_compact_keeps_the_run_inputs_rows(recorded, tmp_path, monkeypatch):
    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "store"
    shutil.copytree(recorded["root"] / "same", path)
    st = store_mod.open(path)
    before = st.measured_inputs()
    assert len(before) == 1
    result = store_compact.compact(st, keep_s=0)
    assert result.merged > 1
    st = store_mod.open(path)
    files = sorted(p.name for p in (path / "run_inputs").glob("part-*.parquet"))
    assert len(files) == 1 and "-compacted-" in files[0]  # the listener's file went with its batch
    assert st.measured_inputs() == before
    assert _size_warnings(path) == []
    # store clean keeps them (an orphan is a part file without its batch's runs file), and
    # removes one that lost its runs file as it removes any table's
    from sparkpredict.cli import main

    orphan = path / "run_inputs" / "part-0000000000001-py-000000000000.parquet"
    shutil.copy(path / "run_inputs" / files[0], orphan)
    assert main(["store", "clean", "--store", str(path), "--older-than", "0"]) == 0
    assert sorted(p.name for p in (path / "run_inputs").glob("part-*.parquet")) == files
    assert store_mod.open(path).measured_inputs() == before


def test_an_old_store_without_the_table_reads_and_warns_as_before(tmp_path, monkeypatch):
    """A store from before run_inputs (tests/data/history, 0.1.0) has no such folder: it reads
    no rows, writes none on a read, and a declared run keeps its old warning."""
    from sparkpredict import suggest_executors

    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "store"
    _measured_history(path)
    st = store_mod.open(path)
    assert not (path / "run_inputs").exists()
    empty = st.read("run_inputs")
    assert empty.empty and list(empty.columns) == S.TABLES["run_inputs"].names
    assert st.measured_inputs() == {}
    # the newest wordcount run declared again: nothing to compare it with
    runs = st.runs()
    last = runs[runs.job == "wordcount"].tail(1)
    st.append({"runs": last.assign(input_bytes_source="declared", updated_ms=last.updated_ms + 1)})
    warned = [w for w in suggest_executors("wordcount", "16MB", store=str(path)).warnings if MIXED in w or FAR in w]
    assert len(warned) == 1
    assert warned[0].startswith("the history of wordcount mixes 1 run whose input size was declared")
    assert ("A declared run keeps no measured size to compare: where each declared size is what its stages "
            "read, the sizes agree and nothing is wrong; where not, one input is recorded as two sizes. "
            "Declare the size on every run of the job") in warned[0]
    assert not (path / "run_inputs").exists()


def _sort_read_as(tmp_path, monkeypatch, read):
    """The history's sort runs (all declared) in a store at ``tmp_path / "store"``, each given a
    run_inputs row of ``read(declared sizes)`` beside its runs row, as the listener writes them
    (the same updated_ms): (the store, the sort runs as written)."""
    import pyarrow as pa

    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "store"
    shutil.copytree(HISTORY, path)
    st = store_mod.open(path)
    runs = st.runs()
    sort = runs[(runs.job == "sort") & (runs.status == "succeeded")]
    sort = sort.assign(updated_ms=sort.updated_ms + 1)
    st.append({"runs": sort, "run_inputs": pa.table({"run_id": sort.run_id.tolist(),
                                                     "measured_input_bytes": [int(n) for n in read(sort.input_bytes)],
                                                     "updated_ms": sort.updated_ms.tolist()})})
    return st, sort


def test_a_job_that_reads_its_input_three_times_is_out_of_line_only_by_a_typo(tmp_path, monkeypatch):
    """A sweep's sort declares its files' size and its stages read them three times (its range
    partitioner's sample, then the sort: 16,000,000 declared, 48,000,000 read, checked with
    `sparkpredict sweep --workload sort`). Every run alike is no mistake; one declared 10x is,
    and the size offered is at the job's ratio, not what its stages read."""

    from sparkpredict.units import format_bytes

    path = tmp_path / "store"
    st, sort = _sort_read_as(tmp_path, monkeypatch, lambda declared: 3 * declared)
    assert set(sort.input_bytes_source) == {"declared"} and len(sort) == 24
    from sparkpredict import suggest_executors

    def size_warnings():
        return [w for w in suggest_executors("sort", "16MB", store=str(path)).warnings if MIXED in w or FAR in w]

    assert size_warnings() == []
    typo = sort.iloc[5]
    st.append({"runs": sort.iloc[[5]].assign(input_bytes=10 * typo.input_bytes, updated_ms=typo.updated_ms + 1)})
    [far] = size_warnings()
    assert (f"({typo.run_id} declared {format_bytes(10 * typo.input_bytes)}, its stages read "
            f"{format_bytes(3 * typo.input_bytes)}), 3x or more away from the 0.33x of it that the job's runs "
            "recorded (their median)") in far, far
    assert f"store edit {typo.run_id} --input-size {typo.input_bytes} --store " in far
    assert "beside measured runs" not in far  # every run declared: a typo is the one reading


def test_declared_sizes_that_do_not_follow_what_the_stages_read_are_no_typos(tmp_path, monkeypatch):
    """From a review: a sweep of sort over 4, 8, 16 and 32 MB declared, whose stages read the
    same 10 MB every run (a database table Spark counts nothing of, joined with a fixed file; or
    Parquet's footers, where docs/capture.md says to declare). Its ratios spread with the sizes
    (0.4x to 3.2x), so the job has no usual ratio: the 6 runs declared 32 MB were named as
    mistyped, 4x the 0.8x median, with `store edit ... --input-size 8000000` offered, which would
    have written a wrong size over a right one."""

    from sparkpredict import suggest_executors

    path = tmp_path / "store"
    _, sort = _sort_read_as(tmp_path, monkeypatch, lambda declared: [10_000_000] * len(declared))
    assert sorted(set(sort.input_bytes)) == [4_000_000, 8_000_000, 16_000_000, 32_000_000]
    warned = [w for w in suggest_executors("sort", "16MB", store=str(path)).warnings if MIXED in w or FAR in w]
    assert warned == []
