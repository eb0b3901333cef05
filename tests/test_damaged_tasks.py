"""Damaged store files that reached the user as a traceback, found by a probe of the parts the
earlier damage probes (tests/test_damaged_store.py, tests/test_damaged_models.py) left out: the
``tasks`` table of a listener's store (tests/data/history, written one batch per run: a file cut
short, emptied, not Parquet, a column missing, null or of another type, impossible values,
another table's file planted, the folder gone or a file), the files of a compacted batch (the
same damage, its footer's list of replaced batches mangled, a half-finished compaction's
leftovers: uncommitted parts, a twin compacted batch, files half removed) and a local retrain's
stage-model artifacts (every field set to null, [], {}, "x", -1, 0, 1e308, NaN or true, the
file cut short; each loaded one asked predict, interval, stage plan and stage errors). After
each damage it ran ``Store.runs/stages/tasks``, ``suggest_executors``, ``load_models``,
``load_stage_models`` and, through ``cli.main``, ``runs``, ``store summary``, ``simulate``,
``explain``, ``suggest``, ``retrain --local`` and ``store compact``. Nearly all of it was refused
with an ``error:`` and a ``fix:``, or read around; these are the cases that were not: runs rows
without a run id (compacted or not) and a stage model's node index too large for numpy.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_damaged_store import _refused

from sparkpredict import store
from sparkpredict.cli import main
from sparkpredict.errors import StoreError

HISTORY = Path(__file__).parent / "data" / "history"


@pytest.fixture
def copy(tmp_path) -> Path:
    dest = tmp_path / "store"
    shutil.copytree(HISTORY, dest)
    return dest


def test_runs_rows_without_a_run_id_are_refused_not_read_as_one_run(copy, capsys):
    """A runs file whose run ids are null (another tool's, or edited) read as one run: every
    run's latest row wins, so its 72 runs came back as 1, silently, and `simulate` and `explain`
    of one of them put that run's None in their "no run" message (TypeError: sequence item 0:
    expected str instance, NoneType found, timeline.py and monitor_explain.py)."""
    [runs_file] = (copy / "runs").glob("part-*.parquet")
    first = pq.read_table(runs_file)["run_id"][0].as_py()
    table = pq.read_table(runs_file)
    i = table.column_names.index("run_id")
    pq.write_table(table.set_column(i, "run_id", pa.nulls(table.num_rows, pa.string())), runs_file)
    with pytest.raises(StoreError, match="has 72 row\\(s\\) without a run id") as err:
        store.open(copy).runs()
    assert runs_file.name in err.value.message
    assert err.value.fix.startswith(f"move the batch's files ({runs_file.name}")
    for argv in (["simulate", first], ["explain", first], ["runs", "--out", str(copy.parent / "r.csv")]):
        out = _refused(capsys, [*argv, "--store", str(copy)], copy)
        assert "without a run id" in out



@pytest.fixture(scope="module")
def with_stage_models(tmp_path_factory) -> Path:
    """tests/data/history with the sort job's models (its stage model too) in its registry."""
    path = tmp_path_factory.mktemp("damaged-stage") / "store"
    shutil.copytree(HISTORY, path)
    assert main(["retrain", "--store", str(path), "--local", "--job", "sort", "--no-compact"]) == 0
    return path


def test_a_stage_model_whose_tree_holds_a_node_index_too_large_is_refused_as_corrupt(with_stage_models, tmp_path):
    """A stage-model artifact whose tree's node array is a number too large for an index (1e308)
    raised numpy's OverflowError from `load_stage_models`, not the ModelError that names the
    artifact and the refit that every other mangled field gets."""
    import json

    from sparkpredict import registry as R
    from sparkpredict.errors import ModelError

    path = tmp_path / "store"
    shutil.copytree(with_stage_models, path)
    [artifact] = (path / "_models" / "artifacts").glob("sort-*/stage-*.json")
    doc = json.loads(artifact.read_text())
    doc["model"]["shared"]["trees"][0]["left"] = 1e308
    artifact.write_text(json.dumps(doc))
    with pytest.raises(ModelError, match="stage model is corrupt: OverflowError") as err:
        R.load_stage_models(str(path), ["sort"])
    assert artifact.name in err.value.message and "'sort'" in err.value.message
    assert f"sparkpredict retrain --store {path} --job sort --force" in err.value.fix


@pytest.mark.parametrize("home,planted", [("stages", "tasks"), ("executors", "tasks"), ("tasks", "stages"),
                                          ("stages", "runs"), ("tasks", "executors")])
def test_another_tables_file_copied_over_a_tables_file_is_refused_naming_where_it_belongs(copy, capsys,
                                                                                          home, planted):
    """A file of one table copied into another's folder under its batch's name (a copy to the
    wrong folder) has a run_id, and read as rows of that table: a stages file in tasks/ gave
    384 task rows of null task ids, without a word. Its columns the table lacks now refuse it."""
    first = store.open(copy).runs().run_id.iloc[0]
    [src] = (copy / home).glob("part-*.parquet")
    shutil.copy(src, copy / planted / src.name)
    with pytest.raises(StoreError, match=f"in the store's {planted}/ folder has column\\(s\\) the {planted} "
                                         "table does not have") as err:
        store.open(copy).read(planted)
    assert err.value.fix.startswith(f"move it out of that folder (its columns are those of the {home} table); "
                                    f"if it was copied over the {planted} file of that name, restore")
    reader = {"runs": ["runs", "--out", str(copy.parent / "r.csv")], "executors": ["explain", first]}
    out = _refused(capsys, [*reader.get(planted, ["simulate", first]), "--store", str(copy)], copy)
    assert "does not have" in out


@pytest.mark.parametrize("table,key", [("tasks", "stage_id"), ("tasks", "task_id"), ("stages", "stage_id"),
                                       ("executors", "executor_id")])
@pytest.mark.parametrize("damage", ["null", "dropped"])
def test_rows_without_their_own_id_are_refused_naming_the_file(copy, capsys, table, key, damage):
    """Task rows whose stage ids were nulls (another tool's file, an edit) read as tasks of no
    stage: `explain` said the run "has no completed stages", `simulate` replayed it with numpy's
    cast warning. Spark gives every task, stage and executor its id, and the listener and ingest
    write them (no real log of tests/data/eventlogs or shared/ has a null one)."""
    first = store.open(copy).runs().run_id.iloc[0]
    [f] = (copy / table).glob("part-*.parquet")
    t = pq.read_table(f)
    i = t.column_names.index(key)
    t = t.remove_column(i) if damage == "dropped" else t.set_column(i, key, pa.nulls(t.num_rows, t.schema.field(key).type))
    pq.write_table(t, f)
    said = f"of the store's {table} has {t.num_rows} row\\(s\\) without a {key.replace('_', ' ')}"
    with pytest.raises(StoreError, match=said) as err:
        store.open(copy).read(table)
    assert f.name in err.value.message and err.value.fix.startswith("move the batch's files")
    # a read that does not ask for the id reads what it asked for
    assert len(store.open(copy).read(table, columns=["run_id"])) == t.num_rows
    out = _refused(capsys, ["explain", first, "--store", str(copy)], copy)
    assert "without a" in out


@pytest.mark.parametrize("column, value", [("duration_ms", -5), ("finish_ms", 1)])
def test_task_rows_that_end_before_they_start_are_refused_not_replayed_as_no_time(copy, capsys, column, value):
    """A tasks file whose durations were set to -5 ms (or whose finish times fell before their
    launch) replayed as if those tasks took no time: `simulate` said 3.1 s for a run recorded in
    6.4 s (self-check -52%), with no warning. Spark never records a task ending before it starts."""
    import pyarrow.compute as pc

    [tasks_file] = (copy / "tasks").glob("part-*.parquet")
    table = pq.read_table(tasks_file)
    run = table["run_id"][0].as_py()
    mine = pc.equal(table["run_id"], run)
    i = table.column_names.index(column)
    table = table.set_column(i, column, pc.if_else(mine, pa.scalar(value, pa.int64()), table[column]))
    pq.write_table(table, tasks_file)
    out = _refused(capsys, ["simulate", run, "--store", str(copy)], copy)
    n = pc.sum(mine.cast(pa.int64())).as_py()
    assert f"run '{run}' has {n} of {n} task rows that end before they start" in out
    assert f"sparkpredict store edit {run} --exclude" in out and "sparkpredict ingest LOG --store NEW_FOLDER" in out
    # the other runs of the file replay as before
    other = next(r for r in table["run_id"].to_pylist() if r != run)
    assert main(["simulate", other, "--store", str(copy)]) == 0


def test_a_models_reference_run_whose_tasks_end_before_they_start_warns_and_still_predicts(copy, caplog):
    """One run whose driver's clock stepped back (ingest stores it, with a warning) must not make
    every prediction of its job an error where the replay or the stage model takes it as their
    reference run: they read those tasks as taking no time, as before, and say so."""
    import logging

    import pyarrow.compute as pc

    from sparkpredict.features.runs import runs_table
    from sparkpredict.models.replay import ReplayRuntimeModel
    from sparkpredict.models.stages import StageRuntimeModel

    [tasks_file] = (copy / "tasks").glob("part-*.parquet")
    table = pq.read_table(tasks_file)
    runs = runs_table(copy)
    sort = runs[runs.job == "sort"]
    run = sort.index[0] if sort.index.name == "run_id" else sort.run_id.iloc[0]
    # one task of the run (a run all of whose tasks took no time models no stage: no reference)
    first = table["run_id"].to_pylist().index(run)
    one = pa.array([k == first for k in range(table.num_rows)])
    i = table.column_names.index("duration_ms")
    pq.write_table(table.set_column(i, "duration_ms", pc.if_else(one, pa.scalar(-5, pa.int64()),
                                                                    table["duration_ms"])), tasks_file)
    query = sort[sort.run_id == run] if "run_id" in sort else sort.loc[[run]]
    for model in (ReplayRuntimeModel(store=str(copy)), StageRuntimeModel(store=str(copy))):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="sparkpredict.models.timeline"):
            got = model.fit(sort).predict(query)
        assert len(got) == 1 and got[0] > 0
        assert f"run '{run}' has 1 of " in caplog.text and "replayed with those tasks taking no time" in caplog.text
