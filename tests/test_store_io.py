import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparkpredict import store
from sparkpredict.errors import StoreError
from sparkpredict.store import schema as S


def _batch(run_id, updated_ms=1, status="succeeded", n_stages=2):
    return {
        "runs": pd.DataFrame({"run_id": [run_id], "job": ["j"], "status": [status],
                              "start_ms": [1000], "updated_ms": [updated_ms]}),
        "stages": pd.DataFrame({"run_id": [run_id] * n_stages, "stage_id": range(n_stages)}),
    }


def test_roundtrip_and_latest_run_row_wins(tmp_path):
    s = store.open(tmp_path / "st", create=True)
    s.append(_batch("app-1", updated_ms=1, status="running", n_stages=2))
    s.append(_batch("app-1", updated_ms=2, status="succeeded", n_stages=3))
    runs = s.runs()
    assert list(runs.run_id) == ["app-1"] and runs.status.iloc[0] == "succeeded"
    assert len(s.stages()) == 5  # incremental batches add stages
    assert list(s.stages().columns) == S.TABLES["stages"].names


def test_uncommitted_batch_is_invisible(tmp_path):
    s = store.open(tmp_path / "st", create=True)
    s.append(_batch("app-1"))
    # A writer that died after its stage file but before its runs file (the commit mark):
    (tmp_path / "st" / "stages" ).mkdir(exist_ok=True)
    pq.write_table(S.conform("stages", pa.table({"run_id": ["ghost"], "stage_id": pa.array([9], pa.int32())})),
                   tmp_path / "st" / "stages" / "part-999-dead.parquet")
    assert set(s.stages().run_id) == {"app-1"}


def test_missing_store_names_the_fix(tmp_path):
    with pytest.raises(StoreError) as e:
        store.open(tmp_path / "nothing")
    assert "record a run first" in e.value.fix


def test_foreign_folder_refused_and_untouched(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(StoreError) as e:
        store.open(tmp_path, create=True)
    assert "not a sparkpredict store" in str(e.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_unknown_schema_version_refused(tmp_path):
    store.open(tmp_path / "st", create=True)
    (tmp_path / "st" / S.MARKER_FILE).write_text(json.dumps({"format": S.STORE_FORMAT, "schema_version": 99}))
    with pytest.raises(StoreError) as e:
        store.open(tmp_path / "st")
    assert "schema version 99" in str(e.value)


def test_unwritable_store(tmp_path):
    # Runs as root in CI, so permissions cannot make a folder unwritable; a file in the way can.
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    with pytest.raises(StoreError) as e:
        store.open(blocker / "st", create=True)
    assert e.value.fix
    assert blocker.read_text() == "x"


def test_schema_rejects_unknown_columns():
    with pytest.raises(ValueError):
        S.conform("runs", pa.table({"run_id": ["a"], "bogus": [1]}))
