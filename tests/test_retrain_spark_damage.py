"""The Spark retrain refuses the damaged store files the local read refuses, with its error.

``Store.read`` (every local reader, ``retrain --local`` among them) refuses a file in a table's
folder without a run_id column (a foreign file), one with columns the table does not have
(another table's file copied there) and rows without their key (a runs row's run id, a stage's
or a task's ids). The Spark path read the same files through Spark's Parquet reader with the
table's columns: the runs rows without a run id were dropped, a foreign file's columns read as
nulls, another table's extra columns were never seen, and it fitted and committed models of a
store the local path refuses. Each case damages a real store as tests/test_damaged_tasks.py
does, and asks both paths: the same error and fix, and no file of the store (its registry
included) changed.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_damaged_store import _sums

from sparkpredict import retrain as RT
from sparkpredict import store
from sparkpredict.cli import main
from sparkpredict.errors import StoreError

pytestmark = pytest.mark.spark

HISTORY = Path(__file__).parent / "data" / "history"


@pytest.fixture(scope="module")
def spark(spark_app, tmp_path_factory):
    with spark_app(tmp_path_factory.mktemp("listener-store"), job="retrain-damage", master="local[2]") as session:
        yield session


@pytest.fixture(scope="module")
def with_registry(tmp_path_factory) -> Path:
    """tests/data/history (one batch, a file per table) with its whole-job models in the registry
    (which a refusal must leave as they are)."""
    path = tmp_path_factory.mktemp("spark-damage") / "store"
    shutil.copytree(HISTORY, path)
    assert main(["retrain", "--store", str(path), "--local", "--no-stage-models", "--no-compact"]) == 0
    return path


@pytest.fixture
def copy(with_registry, tmp_path) -> Path:
    dest = tmp_path / "store"
    shutil.copytree(with_registry, dest)
    return dest


def _file(path: Path, table: str) -> Path:
    [f] = (path / table).glob("part-*.parquet")
    return f


def _without(path: Path, table: str, key: str, damage: str = "null") -> Path:
    """``table``'s file with ``key`` set to nulls, or dropped."""
    f = _file(path, table)
    t = pq.read_table(f)
    i = t.column_names.index(key)
    t = t.remove_column(i) if damage == "dropped" else t.set_column(i, key, pa.nulls(t.num_rows, t.schema.field(key).type))
    pq.write_table(t, f)
    return f


def _both_refuse(path: Path, spark) -> StoreError:
    """The local retrain's and the Spark retrain's refusal of ``path``: the same error and fix,
    and every file of the store as it was. Forced, so that both read the stage and task rows
    (every job's stage model to fit) and the Spark path, had it not refused, had refit and
    committed every model."""
    before = _sums(path)
    with pytest.raises(StoreError) as local:
        RT.retrain_local(path, force=True)
    with pytest.raises(StoreError) as on_spark:
        RT.retrain_spark(path, spark=spark, force=True)
    assert (on_spark.value.message, on_spark.value.fix) == (local.value.message, local.value.fix)
    assert _sums(path) == before
    return on_spark.value


@pytest.mark.parametrize("table,key", [("runs", "run_id"), ("stages", "stage_id"), ("tasks", "stage_id"),
                                       ("tasks", "task_id")])
@pytest.mark.parametrize("damage", ["null", "dropped"])
def test_rows_without_their_key_are_refused_on_spark_as_by_the_local_read(copy, spark, table, key, damage):
    """Spark dropped the runs rows without a run id (the fit went on with the other runs) and
    read task rows without their ids as rows of no stage. A key dropped from a file reads as
    nulls; of runs, the file without a run_id is a foreign file."""
    f = _without(copy, table, key, damage)
    n = pq.read_metadata(f).num_rows
    err = _both_refuse(copy, spark)
    if damage == "dropped" and key == "run_id":
        assert err.message == f"foreign file {str(f)!r} in the store's runs/ folder"
    else:
        assert err.message == f"file {str(f)!r} of the store's {table} has {n} row(s) without a {key.replace('_', ' ')}"
        assert err.fix.startswith(f"move the batch's files ({f.name}, in every table folder)")


@pytest.mark.parametrize("table", ["stages", "tasks"])
def test_a_foreign_file_in_a_stage_table_is_refused_on_spark_as_by_the_local_read(copy, spark, table):
    """A file without a run_id column in stages/ or tasks/: Spark read its rows with null run
    ids, which matched no run and were dropped, silently."""
    f = _without(copy, table, "run_id", "dropped")
    err = _both_refuse(copy, spark)
    assert err.message == f"foreign file {str(f)!r} in the store's {table}/ folder"


@pytest.mark.parametrize("home,planted", [("stages", "runs"), ("tasks", "runs"), ("tasks", "stages"),
                                          ("stages", "tasks")])
def test_another_tables_file_copied_over_is_refused_on_spark_as_by_the_local_read(copy, spark, home, planted):
    """Another table's file copied over a table's file: Spark read it with the table's columns,
    those it lacks as nulls, and never saw its own (a tasks file in stages/ has every stage key,
    a stages file in runs/ every run id)."""
    shutil.copy(_file(copy, home), _file(copy, planted))
    err = _both_refuse(copy, spark)
    assert err.message.startswith(f"file {str(_file(copy, planted))!r} in the store's {planted}/ folder has "
                                  f"column(s) the {planted} table does not have (")
    assert err.fix.startswith(f"move it out of that folder (its columns are those of the {home} table)")


def test_a_damaged_batch_of_its_own_is_refused_with_the_fix_of_its_batch(copy, spark):
    """A batch of its own (not compacted), whose tasks lack their task ids, among sound batches:
    the fix names that batch, and the local read's count of its rows."""
    st = store.open(copy)
    runs = st.runs()
    one = runs.head(1).assign(run_id="app-extra", app_id="app-extra")
    tasks = st.read("tasks").head(5).assign(run_id="app-extra", task_id=None)
    batch = st.append({"runs": one, "tasks": tasks})
    err = _both_refuse(copy, spark)
    assert err.message == (f"file {str(copy / 'tasks' / f'part-{batch}.parquet')!r} of the store's tasks has "
                           "5 row(s) without a task id")
    assert err.fix.startswith(f"move the batch's files (part-{batch}.parquet, in every table folder)")


def test_stage_rows_without_a_run_id_are_read_around_on_spark_as_by_the_local_read(copy, spark):
    """Stage rows of a file that has a run_id column, some of them null, belong to no run: the
    local read leaves them out of every run's rows and refuses nothing, and so does Spark."""
    import pyarrow.compute as pc

    from sparkpredict import retrain_spark as RS

    f = _file(copy, "stages")
    t = pq.read_table(f)
    i = t.column_names.index("run_id")
    first = pc.equal(pa.array(range(t.num_rows)), 0)
    pq.write_table(t.set_column(i, "run_id", pc.if_else(first, pa.scalar(None, pa.string()), t["run_id"])), f)
    st = store.open(copy)
    assert st.read("stages")["run_id"].isna().sum() == 1
    assert RS.read_committed_spark(spark, st, "stages").count() == t.num_rows
