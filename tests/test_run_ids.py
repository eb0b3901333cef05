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


def _other_cluster_copy(dst: Path, start_ms: int, name: str = DATABRICKS.name) -> Path:
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
    out = dst / name
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


def test_a_log_of_a_stored_run_is_known_by_its_start_without_a_full_parse(tmp_path, monkeypatch):
    """Spark names the log after its app id, which no longer names the run alone: the name's
    shortcut ("exists", not read) missed, and every log was parsed whole at every ingest."""
    import sparkpredict.capture.eventlog_ingest as ing

    path = tmp_path / "store"
    assert ingest_event_logs([DATABRICKS], path).files[0].outcome == "ingested"
    # as Spark names it, at another path: no fingerprint shortcut
    elsewhere = tmp_path / "copy" / f"{APP}.zstd"
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(DATABRICKS.read_bytes())
    other = _other_cluster_copy(tmp_path / "cluster-b", START_MS + 7, f"{APP}.zstd")
    parsed = []
    real = ing._parse_source
    monkeypatch.setattr(ing, "_parse_source", lambda src: parsed.append(src.path) or real(src))
    # the stored run is cut short (Databricks wrote no end): a log of it may hold more, so it is
    # read; made whole, the same log is then known from its first lines
    st = store.open(path)
    runs = st.runs()
    st.append({"runs": runs.assign(status="succeeded", updated_ms=runs.updated_ms + 1)})
    outcomes = ingest_event_logs([elsewhere, other], path).files
    assert [f.outcome for f in outcomes] == ["exists", "ingested"]
    assert parsed == [str(other)]  # the other cluster's application, same name, is still read


def _as_stored_before(store_path: Path) -> None:
    """Rewrite a store as sparkpredict wrote it before run ids took the driver's start: the run id
    without ``@<ms>`` in every table and in its batch's label."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    for table in S.TABLES:
        for f in (store_path / table).glob("part-*.parquet"):
            t = pq.read_table(f)
            old = pc.replace_substring_regex(t["run_id"], r"@[0-9]+$", "")
            t = t.set_column(t.schema.get_field_index("run_id"), "run_id", old)
            name = re.sub(r"(app-[0-9]{14}-[0-9]{4})_[0-9]+", r"\1", f.name)
            pq.write_table(t, f.with_name(name))
            if name != f.name:
                f.unlink()


def test_a_store_written_before_keeps_one_copy_of_a_run(tmp_path):
    """A run stored cut short under its old id (app-...-0000): the fuller log was stored beside
    it under the new id, one application as two runs, and read again at every ingest."""
    data = DATABRICKS.read_bytes()
    cut = tmp_path / "cut" / DATABRICKS.name
    cut.parent.mkdir()
    cut.write_bytes(data[:len(data) // 2])
    path = tmp_path / "store"
    ingest_event_logs([cut], path)
    _as_stored_before(path)
    assert list(store.open(path).runs().run_id) == [APP]
    (f,) = ingest_event_logs([DATABRICKS], path).files
    assert f.outcome == "ingested" and f.replaced is not None
    runs = store.open(path).runs()
    assert list(runs.run_id) == [f"{APP}@{START_MS}"] and runs.num_tasks.iloc[0] == len(store.open(path).tasks())
    (again,) = ingest_event_logs([DATABRICKS], path).files
    assert again.outcome == "unchanged"


def test_a_run_is_found_by_the_app_id_spark_shows(tmp_path, capsys):
    """Its id gained the driver's start: `simulate app-...-0000` (as Spark's UI names the
    application) said "no run"."""
    from sparkpredict.cli import main

    path = tmp_path / "store"
    ingest_event_logs([DATABRICKS], path)
    assert store.open(path).run_id_of(APP) == f"{APP}@{START_MS}"
    assert main(["simulate", APP, "--store", str(path), "--executors", "2"]) == 0
    assert f"{APP}@{START_MS}" in capsys.readouterr().out
    # two runs of that app id: it names neither, and the error names both
    ingest_event_logs([_other_cluster_copy(tmp_path / "b", START_MS + 1)], path)
    assert main(["simulate", APP, "--store", str(path), "--executors", "2"]) == 2
    err = capsys.readouterr().err
    assert f"app id '{APP}' names 2 runs in store" in err and f"{APP}@{START_MS + 1}" in err


def test_sweep_verification_takes_the_start_with_the_app_id(tmp_path):
    """A sweep checks its first run was recorded; an earlier run of another master that shares
    its app id (local-cluster numbers from 0000 again) must not stand in for it."""
    from sparkpredict.errors import ListenerError
    from sparkpredict.sweep import _verify_recorded

    path = tmp_path / "store"
    ingest_event_logs([DATABRICKS], path)
    _verify_recorded(str(path), APP, START_MS)
    with pytest.raises(ListenerError, match="was not recorded"):
        _verify_recorded(str(path), APP, START_MS + 1)
    with pytest.raises(ListenerError, match="was not recorded"):
        _verify_recorded(str(path), "app-20240919162642-0001", START_MS)


def test_an_app_id_of_two_runs_is_refused_naming_both(tmp_path):
    from sparkpredict.errors import UnknownJobError
    from sparkpredict.monitor import explain_run

    other = _other_cluster_copy(tmp_path / "cluster-b", START_MS + 2_500)
    path = tmp_path / "store"
    ingest_event_logs([DATABRICKS, other], path)
    # it had read as "no run", offering three unrelated ones
    with pytest.raises(UnknownJobError) as e:
        explain_run(APP, path)
    assert e.value.message == (f"app id {APP!r} names 2 runs in store {str(path)!r}: "
                               f"{APP}@{START_MS}, {APP}@{START_MS + 2_500}")
    assert e.value.fix == "give the run id of the one you mean"
