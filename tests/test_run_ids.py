"""Run ids: Spark's standalone-form application ids (``app-<second>-0000``) are numbered per master,
so two clusters' applications can share one. The store keys such a run by the id and the driver's
start time; the listener's side of this is checked with real Spark in test_listener.py and
test_listener_resubmitted.py (the listener and the event log of one run agree on it)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pytest

from sparkpredict import store
from sparkpredict.capture.eventlog_ingest import ingest_event_logs
from sparkpredict.capture.listener import java_source_dir
from sparkpredict.store import schema as S

# a Databricks log: its cluster's master numbered the application 0000
DATABRICKS = Path(__file__).parent / "data" / "eventlogs" / "nds_q88_photon_db_13_3.zstd"
APP, START_MS = "app-20240919162642-0000", 1726763195840


@pytest.mark.parametrize("app, attempt, start, want", [
    (APP, None, START_MS, f"{APP}@{START_MS}"),
    ("app-20240919162642-12345", None, 5, "app-20240919162642-12345@5"),  # past 9999 applications
    ("app-20240919162642-0003", "2", 7, "app-20240919162642-0003@7/2"),
    ("local-1532512550423", None, 1532512550423, "local-1532512550423"),  # unique by the millisecond
    ("application_1603128018386_7756", "1", 9, "application_1603128018386_7756/1"),  # YARN: unique per RM
    ("spark-3b1c0d2e9f", None, 9, "spark-3b1c0d2e9f"),  # Kubernetes
    ("app-2024-0000", None, 9, "app-2024-0000"),  # not the master's form: a user's own spark.app.id
    (APP, None, None, APP),  # no start time known: the id alone
])
def test_run_id_qualifies_only_ids_numbered_per_master(app, attempt, start, want):
    assert S.run_id(app, attempt, start) == want


def test_listener_source_states_the_same_rule():
    """The Java side is exercised by the local-cluster tests; this pins its pattern to Python's."""
    text = (java_source_dir() / "io" / "sparkpredict" / "RunRecord.java").read_text()
    java = re.search(r'PER_MASTER_APP_ID = Pattern\.compile\("([^"]+)"\)', text).group(1)
    assert java == S._PER_MASTER_APP_ID.pattern
    assert 'appId + "@" + startMs' in text


def _other_cluster_copy(dst: Path, start_ms: int) -> Path:
    """The same log as another job cluster's application would write it: same id, another start."""
    data = pa.CompressedInputStream(pa.OSFile(str(DATABRICKS)), "zstd").read()
    lines = data.splitlines()
    for i, ln in enumerate(lines):
        if b'"SparkListenerApplicationStart"' in ln:
            ev = json.loads(ln)
            assert (ev["App ID"], ev["Timestamp"]) == (APP, START_MS)
            ev["Timestamp"] = start_ms
            lines[i] = json.dumps(ev).encode()
    dst.mkdir(parents=True)
    out = dst / DATABRICKS.name
    with pa.CompressedOutputStream(str(out), "zstd") as f:
        f.write(b"\n".join(lines) + b"\n")
    return out


def test_two_clusters_applications_with_one_id_are_two_runs(tmp_path):
    other = _other_cluster_copy(tmp_path / "cluster-b", START_MS + 2_500)
    path = tmp_path / "store"
    first = ingest_event_logs([DATABRICKS], path)
    second = ingest_event_logs([other], path)
    # before, the second was skipped as "exists": another job's run, lost to training
    assert [f.outcome for f in first.files + second.files] == ["ingested", "ingested"]
    runs = store.open(path).runs().sort_values("start_ms")
    assert list(runs.run_id) == [f"{APP}@{START_MS}", f"{APP}@{START_MS + 2_500}"]
    assert list(runs.app_id) == [APP, APP]
    tasks = store.open(path).tasks()
    assert tasks.groupby("run_id").size().tolist() == runs.num_tasks.tolist()
    assert runs.num_tasks.iloc[0] == runs.num_tasks.iloc[1] > 0
    # each log again: its own run, stored already
    again = ingest_event_logs([DATABRICKS, other], path)
    assert {f.outcome for f in again.files} == {"unchanged"}
    assert sorted(f.run_id for f in again.files) == sorted(runs.run_id)
