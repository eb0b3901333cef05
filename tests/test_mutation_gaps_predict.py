"""Gaps a mutation audit found: a boolean cell in a query (a Parquet column of flags) was named
as the 1 or 0 it counts as, and numpy's booleans passed as 1 executor; the rolling event log's
"cut short" is its LAST file's cut; the replay's leave-one-out reads a run of under half an
executor on average at 1 executor, not at 0."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from sparkpredict.cli import main
from sparkpredict.cli.predict import check_query
from sparkpredict.errors import IngestError
from tests import test_predict_rows
from tests.test_predict_rows import FIX_VALUES, HISTORY

models = test_predict_rows.models  # the fixture of the history fitted by the CLI, shared

FIX_BOOLEANS = ("a True/False cell is a boolean, no count or size: write the number in its place "
                "(a column saved as booleans holds only True and False)")


# ---- cli/predict.py: boolean cells ---------------------------------------------------------------

def test_a_parquet_querys_boolean_executors_are_named_as_booleans_with_a_fix(models, tmp_path, capsys):
    """A Parquet column of booleans reaches the reader as True/False: said "executors 1 is not a
    whole number of at least 1", which named a good count as the bad one."""
    q = tmp_path / "q.parquet"
    pd.DataFrame({"job": ["sort", "sort"], "input_bytes": [8000000, 16000000],
                  "executors": [True, False]}).to_parquet(q)
    out = tmp_path / "p.csv"
    capsys.readouterr()
    assert main(["predict", str(models), str(q), "--out", str(out)]) == 2
    assert not out.exists()
    assert capsys.readouterr().err == (
        "error: 2 of 2 query rows cannot be predicted (rows counted below the header):\n"
        "  row 1: executors True is a boolean, not a number\n"
        "  row 2: executors False is a boolean, not a number\n"
        f"fix: {FIX_VALUES}; {FIX_BOOLEANS}\n")


def _one(col: str, cell: object) -> tuple[list[str], bool]:
    """What check_query says of one ``col`` cell (the required columns otherwise good)."""
    q = {"job": ["sort"], "input_bytes": [8000000], "executors": [2]}
    q[col] = pd.Series([cell], dtype=object)
    _, problems = check_query(pd.DataFrame(q), {"sort"})
    return problems.rows.get(0, []), problems.booleans


@pytest.mark.parametrize("col, cell, said", [
    ("input_bytes", True, "input_bytes True is a boolean, not a size"),
    ("executors", True, "executors True is a boolean, not a number"),
    ("executors", False, "executors False is a boolean, not a number"),
    ("executor_cores", False, "executor_cores False is a boolean, not a number"),
    ("executor_memory_mb", True, "executor_memory_mb True is a boolean, not a number"),
    # numpy's boolean (an object column built in Python) was read as 1 executor, no error at all
    ("executors", np.True_, "executors True is a boolean, not a number"),
    ("executor_cores", np.True_, "executor_cores True is a boolean, not a number"),
])
def test_every_count_and_size_column_names_a_boolean_as_one(col, cell, said):
    assert _one(col, cell) == ([said], True)


def test_a_boolean_in_a_parameter_column_of_numbers_is_named_so_and_other_bad_cells_get_no_boolean_fix():
    q = pd.DataFrame({"job": ["sort"] * 2, "input_bytes": [8000000] * 2, "executors": [2, 0],
                      "iterations": pd.Series([True, 5], dtype=object)})
    _, problems = check_query(q, {"sort"})
    assert problems.rows == {0: ["iterations True is a boolean, not a number"],
                             1: ["executors 0 is not a whole number of at least 1"]}
    assert problems.error(2, {"sort"}).fix == f"{FIX_VALUES}; {FIX_BOOLEANS}"
    # no boolean anywhere: the general fix alone
    assert _one("executors", 0) == (["executors 0 is not a whole number of at least 1"], False)
    _, plain = check_query(q.iloc[1:], {"sort"})
    assert plain.error(1, {"sort"}).fix == FIX_VALUES


@pytest.mark.parametrize("col, cell, said", [
    ("executors", 1, []),  # the least count is one
    ("executor_cores", 1, []),
    ("executor_cores", 4096, []),
    ("executor_cores", 4097, ["executor_cores 4097 is more than any cluster has (at most 4,096)"]),
    ("executor_memory_mb", 0.5, []),  # any memory above zero, a fraction of a MiB too
    ("executor_memory_mb", 0, ["executor_memory_mb 0 is not a number of MiB above zero"]),
])
def test_the_counts_bounds_are_inclusive(col, cell, said):
    assert _one(col, cell) == (said, False)


# ---- capture/eventlog.py: a rolling log without its start, cut in its last or its first file ------

JOB = b'{"Event":"SparkListenerJobStart","Job ID":0,"Submission Time":1000,"Stage Infos":[],"Stage IDs":[]}\n'
CUT = b'{"Event":"SparkListenerJo'  # a line cut inside its event
CUT_OFF = "it was cut off while being written, or copied in part"
NOT_SPARK = "no SparkListenerApplicationStart event: not a Spark event log, or its beginning is missing"


def _rolling(tmp_path: Path, files: list[bytes], suffix: str = "") -> str:
    folder = tmp_path / "eventlog_v2_app-1"
    folder.mkdir(parents=True)
    for i, data in enumerate(files, 1):
        (folder / f"events_{i}_app-1{suffix}").write_bytes(data)
    return str(folder)


def _refusal(path: str) -> str:
    from sparkpredict.capture.eventlog import parse_event_log

    with pytest.raises(IngestError) as e:
        parse_event_log(path)
    return e.value.message


def test_a_rolling_log_whose_last_file_ends_inside_an_event_was_cut_off(tmp_path):
    """Events and no start, the last file cut: the log was being written (docs/ingest.md), as a
    single file cut so is; a cut in the first file, later files following it, is no such end."""
    assert _refusal(_rolling(tmp_path / "a", [JOB, JOB + CUT])).endswith(
        f"the log ends after 3 lines, before its SparkListenerApplicationStart event: {CUT_OFF}")
    first = _refusal(_rolling(tmp_path / "b", [JOB + CUT, JOB]))
    assert NOT_SPARK in first and CUT_OFF not in first


def test_a_rolling_log_whose_last_compressed_stream_ends_early_was_cut_off(tmp_path):
    z = pa.Codec("zstd").compress(JOB * 50, asbytes=True)
    last = _refusal(_rolling(tmp_path / "a", [z, z[:-5]], ".zstd"))
    assert last.endswith(f"before its SparkListenerApplicationStart event: {CUT_OFF}")
    first = _refusal(_rolling(tmp_path / "b", [z[:-5], z], ".zstd"))
    assert NOT_SPARK in first and CUT_OFF not in first


# ---- models/replay.py: leave-one-out on whole executors, at least 1 -------------------------------

def test_a_dynamic_run_of_under_half_an_executor_is_scored_at_one_executor():
    """A run under dynamic allocation that held 0.4 executors on average is asked for as 1 (as a
    query is): its leave-one-out error is counted, not skipped as a replay at 0 executors."""
    from sparkpredict import store
    from sparkpredict.features.runs import executors_and_cores, runs_table
    from sparkpredict.models.replay import ReplayRuntimeModel

    a, b, c = "local-1795975705584", "local-1795975713600", "local-1795975725787"  # wordcount 4, 4, 8 MB
    s = store.open(HISTORY)
    raw = s.read("runs")
    raw = raw[raw.run_id.isin([a, b, c])].copy()
    raw["master"] = "yarn"
    raw["properties_json"] = json.dumps({"spark.dynamicAllocation.enabled": "true"})
    raw.loc[raw.run_id == a, "executors_mean"] = 0.4
    m = ReplayRuntimeModel(tables={"runs": raw, "stages": s.read("stages"), "tasks": s.read("tasks")}) \
        .fit(runs_table(raw))
    ex, cores = executors_and_cores(m.runs_)
    assert ex[a] == pytest.approx(0.4)
    assert len(m._abs_rel) == 3 and {r for r, _ in m.slow_runs_} == {a, b, c}
    run = m.runs_.loc[a]
    pred = m._predict_one("wordcount", float(run["input_bytes"]), 1.0, float(cores[a]), exclude=a)
    assert dict(m.slow_runs_)[a] == pytest.approx(float(run["wall_ms"]) / 1000 / pred)
