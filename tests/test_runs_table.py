"""Runs table from a real Parquet store and from CSV/Parquet files."""
from __future__ import annotations

import pandas as pd
import pytest

from sparkpredict.errors import InputError, StoreError
from sparkpredict.features.runs import (
    BASE_COLUMNS,
    feature_columns,
    read_runs_file,
    runs_table,
)
from sparkpredict.store import io as store_io


def _runs_rows() -> pd.DataFrame:
    return pd.DataFrame({
        "run_id": ["a", "b", "c", "d"],
        "app_id": ["a", "b", "c", "d"],
        "job": ["etl", "etl", "etl", "ml"],
        "status": ["succeeded", "failed", "succeeded", "succeeded"],
        "start_ms": [1000, 2000, 3000, 4000],
        "wall_ms": [60_500, 10_000, 30_250, 5_000],
        "executors_requested": [4, 4, None, 2],
        "executors_max": [4, 3, 8, 2],
        "executor_cores": [2, 2, 2, 1],
        "executor_memory_mb": [4096, 4096, 4096, 1024],
        "input_bytes": [10 * 2**30, 10 * 2**30, 20 * 2**30, 2**20],
        "shuffle_read_bytes": [5, 6, 7, 8],
        "updated_ms": [1, 1, 1, 1],
    })


def test_runs_table_from_store(tmp_path):
    st = store_io.open(tmp_path / "store", create=True)
    st.append({"runs": _runs_rows()})
    for source in (st, str(tmp_path / "store"), st.runs()):
        t = runs_table(source)
        assert list(t["run_id"]) == ["a", "c", "d"]  # the failed run is dropped
        assert list(t.columns[:7]) == ["run_id"] + BASE_COLUMNS
        # executors: requested, else the most alive at once
        assert list(t["executors"]) == [4.0, 8.0, 2.0]
        assert list(t["runtime_s"]) == [60.5, 30.25, 5.0]
        # post-run columns are kept for inspection but are never model inputs
        assert "shuffle_read_bytes" in t
        assert "shuffle_read_bytes" not in feature_columns(t)


def test_runs_table_errors(tmp_path):
    with pytest.raises(StoreError, match="no sparkpredict store"):
        runs_table(str(tmp_path / "nothing"))
    with pytest.raises(InputError, match="lack columns"):
        runs_table(pd.DataFrame({"run_id": ["x"]}))
    with pytest.raises(InputError, match="cannot read runs"):
        runs_table(42)


def test_read_runs_file_csv_parquet_and_errors(tmp_path):
    df = pd.DataFrame({"job": ["j", "j"], "input_bytes": [1e9, 2e9], "executors": [2, 4],
                       "executor_cores": [1, 1], "executor_memory_mb": [1024, 1024],
                       "runtime_s": [10.0, 12.0], "partitions": [8, 16]})
    df.to_csv(tmp_path / "r.csv", index=False)
    df.to_parquet(tmp_path / "r.parquet", index=False)
    for name in ("r.csv", "r.parquet"):
        r = read_runs_file(tmp_path / name)
        assert list(r["run_id"]) == ["row-0", "row-1"]
        assert feature_columns(r) == ["input_bytes", "executors", "executor_cores", "executor_memory_mb",
                                      "partitions"]
    df.drop(columns=["executors", "runtime_s"]).to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(InputError, match="lacks column.*executors, runtime_s"):
        read_runs_file(tmp_path / "bad.csv")
    df.assign(runtime_s=["x", "y"]).to_csv(tmp_path / "text.csv", index=False)
    with pytest.raises(InputError, match="runtime_s are not numeric"):
        read_runs_file(tmp_path / "text.csv")
    with pytest.raises(InputError, match="not found"):
        read_runs_file(tmp_path / "missing.csv")


def test_runs_without_executor_shape_columns_get_nan_not_a_crash():
    # a store written before the shape was recorded, or an event log that lacks it
    raw = _runs_rows().drop(columns=["executor_cores", "executor_memory_mb", "executors_requested"])
    t = runs_table(raw)
    assert t["executor_cores"].isna().all() and t["executor_memory_mb"].isna().all()
    assert list(t["executors"]) == [4.0, 8.0, 2.0]  # the most alive at once


def test_local_runs_count_the_threads_they_ran_on():
    """local[N] runs N task threads whatever spark.executor.instances says: a sweep's local[3]
    with instances=3 is 3 one-core executors; local[4] with instances=2 is 2 of 2 cores (rows
    without properties_json: the requested count stands in for the instances, and the cores are
    the threads over it, as `submit --executors 2 --executor-cores 2` runs local[4]); but
    instances=3 on local[1] (or local[*] on a 2-core machine) ran on 1 (2) threads, and counting
    it as 3 executors would teach the model that 3 executors are that slow. The runs' properties
    decide where they are recorded: tests/test_local_master_reading.py."""
    rows = pd.DataFrame({
        "run_id": ["sweep", "wide", "one-thread", "star", "yarn"], "job": ["j"] * 5,
        "status": ["succeeded"] * 5, "wall_ms": [1000.0] * 5, "input_bytes": [2**20] * 5,
        "master": ["local[3]", "local[4]", "local[1]", "local[*]", "yarn"],
        "executors_requested": [3, 2, 3, 3, 3], "executors_max": [1, 1, 1, 1, 3],
        "task_slots": [3, 4, 1, 2, 12], "executor_cores": [3, 4, 1, 2, 4],
        "executor_memory_mb": [1024] * 5, "updated_ms": [1] * 5,
    })
    t = runs_table(rows).set_index("run_id")
    assert t.loc[["sweep", "wide", "one-thread", "star", "yarn"], "executors"].tolist() == [3, 2, 1, 2, 3]
    assert t.loc[["sweep", "wide", "one-thread", "star", "yarn"], "executor_cores"].tolist() == [1, 2, 1, 1, 4]


def test_dynamic_allocation_runs_count_their_mean_executors(tmp_path):
    """Two real YARN logs ran with dynamic allocation: spark.executor.instances (1 and 2) was
    only the initial count, and they held up to 3 and 7. The runs table takes the time-weighted
    mean, so that executors x runtime is the executor time they used; the fixed-count runs keep
    their requested 8."""
    from pathlib import Path

    from sparkpredict.capture.eventlog_ingest import ingest_event_logs
    from sparkpredict.features.runs import dynamic_allocation

    ingest_event_logs(Path(__file__).parent / "data" / "eventlogs", tmp_path / "s")
    raw = store_io.open(tmp_path / "s").runs()
    raw = raw[raw["master"] == "yarn"].set_index("run_id")
    dyn = dynamic_allocation(raw["properties_json"])
    assert dyn.sum() == 2
    t = runs_table(raw.reset_index()).set_index("run_id")
    assert set(dyn[dyn].index) <= set(t.index)  # both succeeded
    for rid in t.index:
        r = raw.loc[rid]
        if dyn[rid]:
            assert r["executors_requested"] < r["executors_mean"] < r["executors_max"]
            assert t.loc[rid, "executors"] == pytest.approx(r["executors_mean"])
        else:
            assert t.loc[rid, "executors"] == r["executors_requested"] == 8


def test_parquet_export_keeps_the_stores_integer_types_and_reads_back_as_the_same_table(tmp_path, capsys):
    """`sparkpredict runs --out x.parquet` wrote every count as float64 (input_bytes 1.0737e10,
    num_stages 41.0) while the CSV wrote integers: the file now has the store's integer types,
    with nulls where a run lacks the value, and `fit` reads it back as the same runs table."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sparkpredict.cli import main
    from sparkpredict.store import schema as S

    rows = _runs_rows().assign(num_stages=[41, 3, None, 7], num_tasks=[800, 9, 400, 20])
    st = store_io.open(tmp_path / "store", create=True)
    st.append({"runs": rows})
    out = tmp_path / "runs.parquet"
    assert main(["runs", "--store", str(tmp_path / "store"), "--out", str(out)]) == 0
    capsys.readouterr()
    schema = pq.read_schema(out)
    store_types = S.TABLES["runs"]
    for col in ("input_bytes", "executor_cores", "executor_memory_mb", "shuffle_read_bytes",
                "num_stages", "num_tasks", "executors_max", "start_ms"):
        assert schema.field(col).type == store_types.field(col).type, col
    for col in ("executors", "runtime_s"):  # not integers: a mean under dynamic allocation, seconds
        assert schema.field(col).type == pa.float64(), col
    written = pq.read_table(out).to_pydict()
    assert written["input_bytes"] == [10 * 2**30, 20 * 2**30, 2**20]
    assert written["num_stages"] == [41, None, 7]  # a null, not NaN or 0
    # read back: the floats runs_table gives the models, NaN where the value is missing
    back = read_runs_file(out)
    table = runs_table(st)
    assert all(back[c].dtype == np.float64 for c in table.columns if c not in ("run_id", "job"))
    pd.testing.assert_frame_equal(back[table.columns], table)


def test_runs_out_and_store_summary_say_what_they_read_differently(tmp_path, capsys):
    """`runs --out` wrote "1 run of 1 job" where the store held 3 (a failed and a running one
    left out without a word); `store summary` listed local[2] runs as 2 executors where the
    store holds 1 of 2 cores, without saying why."""
    import shutil
    from pathlib import Path

    from sparkpredict import store as store_mod
    from sparkpredict.cli import main

    hist = tmp_path / "history"
    shutil.copytree(Path(__file__).parent / "data" / "history", hist)
    st = store_mod.open(hist)
    ids = list(st.runs()["run_id"][:2])
    row = st.read("runs", run_ids=ids)
    st.append({"runs": row.assign(status=["failed", "running"], updated_ms=row["updated_ms"] + 1)})
    n = len(st.runs())
    assert main(["runs", "--out", str(tmp_path / "r.csv"), "--store", str(hist)]) == 0
    assert f"wrote {n - 2} runs of 3 jobs to {tmp_path / 'r.csv'} (2 runs not succeeded left out)" in \
        capsys.readouterr().out
    assert main(["store", "summary", "--store", str(hist)]) == 0
    assert "executors as the models read them: local[N] as N one-core executors" in capsys.readouterr().out
