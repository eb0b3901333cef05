"""Dynamic allocation end to end: a real run whose executor count changes, recorded by the
listener and by its own event log; how the models and the advice read such runs; and the
bounds ``submit --executors auto`` sets under it.

One ``local-cluster[3,1,1024]`` application (25-35 s on 2 cores) starts with one executor,
scales up for 12 slow tasks and releases the extra executors once they idle, with
``spark.dynamicAllocation.enabled=True``, as ``SparkConf().set(key, True)`` writes it (Spark reads
the value in any case, trimmed).
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

from sparkpredict import store as store_mod
from sparkpredict.capture.eventlog_ingest import ingest_event_logs

sys.path.insert(0, os.path.dirname(__file__))
from executor_kill import executors_alive
from test_advise_history import fast_model, history, make_store

JOB = "dynalloc"


def _events(log_dir: Path) -> list[dict]:
    """The events of the one event log under ``log_dir`` (plain or zstd, as Spark 4 writes it)."""
    (log,) = log_dir.iterdir()
    files = sorted(log.glob("events_*")) if log.is_dir() else [log]
    out = []
    for f in files:
        data = pa.CompressedInputStream(pa.OSFile(str(f)), "zstd").read() \
            if f.suffix == ".zstd" else f.read_bytes()
        out += [json.loads(line) for line in data.splitlines() if line.strip()]
    return out


@pytest.fixture(scope="module")
def da_run(spark_app, tmp_path_factory):
    """(listener store, event-log store, event log folder) of one dynamic-allocation run."""
    base = tmp_path_factory.mktemp("dynalloc")
    logs = base / "eventlogs"
    logs.mkdir()
    conf = {"spark.executor.memory": "512m", "spark.eventLog.enabled": "true", "spark.eventLog.dir": str(logs),
            "spark.dynamicAllocation.enabled": "True",
            "spark.dynamicAllocation.shuffleTracking.enabled": "true",
            "spark.dynamicAllocation.minExecutors": "1", "spark.dynamicAllocation.initialExecutors": "1",
            "spark.dynamicAllocation.maxExecutors": "3",
            "spark.dynamicAllocation.schedulerBacklogTimeout": "1s",
            "spark.dynamicAllocation.executorIdleTimeout": "2s"}
    with spark_app(base / "listener", job=JOB, master="local-cluster[3,1,1024]", conf=conf) as spark:
        sc = spark.sparkContext

        def slow(x):
            import time

            time.sleep(1.5)
            return x

        # 12 tasks of 1.5 s on one executor: a backlog, for which dynamic allocation adds two
        assert sc.parallelize(range(12), 12).map(slow).sum() == 66
        # then idle past executorIdleTimeout: the executors beyond minExecutors are removed
        deadline = time.time() + 40
        while executors_alive(sc) > 1 and time.time() < deadline:
            time.sleep(0.5)
    ingested = base / "eventlog"
    report = ingest_event_logs([logs], ingested)
    assert report.files_ingested == 1 and not report.errors, report.errors
    return base / "listener", ingested, logs


def _timeline_from_events(events: list[dict]) -> dict:
    """Executors alive over the run, computed from Spark's own events: the most at once and the
    time-weighted mean over [application start, end]; events after the end are not the run's."""
    start = next(e["Timestamp"] for e in events if e["Event"] == "SparkListenerApplicationStart")
    end = next(e["Timestamp"] for e in events if e["Event"] == "SparkListenerApplicationEnd")
    added = {e["Executor ID"]: e["Timestamp"] for e in events if e["Event"] == "SparkListenerExecutorAdded"}
    removed = {e["Executor ID"]: e["Timestamp"] for e in events
               if e["Event"] == "SparkListenerExecutorRemoved" and e["Timestamp"] <= end}
    changes = sorted([(t, 1) for t in added.values()] + [(t, -1) for t in removed.values()],
                     key=lambda c: (c[0], c[1]))
    alive = most = 0
    for _, d in changes:
        alive += d
        most = max(most, alive)
    held = sum(min(removed.get(x, end), end) - max(a, start) for x, a in added.items())
    return {"start": start, "end": end, "added": added, "removed": removed, "max": most,
            "mean": held / (end - start)}


@pytest.mark.spark
@pytest.mark.cluster
def test_listener_and_event_log_record_the_changing_executors_alike_and_as_spark_logged_them(da_run):
    listener, ingested, logs = da_run
    truth = _timeline_from_events(_events(logs))
    # the run really scaled: up for the backlog, down once idle, before its end
    assert truth["max"] >= 2 and truth["removed"], truth
    lst, ing = store_mod.open(listener), store_mod.open(ingested)
    (lrun,), (erun,) = (s.runs().to_dict("records") for s in (lst, ing))
    for run in (lrun, erun):
        assert run["status"] == "succeeded"
        assert (run["start_ms"], run["end_ms"]) == (truth["start"], truth["end"])
        assert run["executors_max"] == truth["max"]
        assert run["executors_mean"] == pytest.approx(truth["mean"], rel=1e-12)
        assert 0 < run["executors_mean"] < run["executors_max"]
        # one-core executors, one task each: the most at once
        assert (run["executor_cores"], run["task_slots"]) == (1, truth["max"])
        # local-cluster[3,..]'s N: no spark.executor.instances was set
        assert run["executors_requested"] == 3
    cols = ["executor_id", "host", "cores", "memory_mb", "added_ms", "removed_ms", "removed_reason"]

    def rows(s):
        ex = s.executors()[cols].sort_values("executor_id").reset_index(drop=True)
        return ex.astype(object).where(ex.notna(), None).to_dict("records")

    assert rows(lst) == rows(ing)
    ex = rows(lst)
    assert {r["executor_id"]: r["added_ms"] for r in ex} == truth["added"]
    assert {r["executor_id"]: r["removed_ms"] for r in ex if r["removed_ms"] is not None} == truth["removed"]
    # released by dynamic allocation, each of 512 MiB
    assert all("killed by driver" in r["removed_reason"] for r in ex if r["removed_ms"] is not None)
    assert {r["memory_mb"] for r in ex} == {512}


@pytest.mark.spark
@pytest.mark.cluster
def test_a_run_under_dynamic_allocation_spelled_True_counts_its_mean_held(da_run):
    """Spark ran dynamic allocation for ``True``; the runs table had read the run as the
    local-cluster's 3 executors (executors_requested), the stage features as its 1.3 on average,
    and the advice had not said that the history used it."""
    from sparkpredict.advise import suggest_executors
    from sparkpredict.features.runs import dynamic_allocation, runs_table
    from sparkpredict.features.stages import config_features

    listener, ingested, _ = da_run
    for path in (listener, ingested):
        raw = store_mod.open(path).runs()
        (mean,) = raw["executors_mean"]
        assert json.loads(raw["properties_json"].iloc[0])["spark.dynamicAllocation.enabled"] == "True"
        (row,) = runs_table(raw).to_dict("records")
        assert row["executors"] == pytest.approx(mean) and row["executors"] < row["executors_max"]
        assert config_features(raw.iloc[0])["executors"] == pytest.approx(mean)
        assert dynamic_allocation(raw["properties_json"], raw["master"]).tolist() == [True]
    a = suggest_executors(JOB, "1MB", store=str(listener))
    lo, hi = a.dynamic_allocation
    assert f"the history used dynamic allocation: set spark.dynamicAllocation.minExecutors={lo} and " \
           f"maxExecutors={hi}" in a.warnings
    assert lo <= a.executors <= hi


@pytest.mark.spark
@pytest.mark.cluster
def test_the_replay_counts_a_dynamic_allocation_run_at_its_mean_as_the_runs_table_does(da_run):
    """A job with too few runs for the whole-job model is advised by the replay, which had counted
    the run at spark.executor.instances, else local-cluster's N (3), else the most it held: its
    training range and reference runs were on another executor axis than the runs table's."""
    from sparkpredict.features.runs import runs_table
    from sparkpredict.models.replay import ReplayRuntimeModel

    st = store_mod.open(da_run[0])
    raw = st.runs()
    # the setting as most runs spell it, so that only the replay's reading is at stake
    raw["properties_json"] = raw["properties_json"].str.replace('"True"', '"true"')
    tables = {"runs": raw, "stages": st.read("stages"), "tasks": st.read("tasks")}
    runs = runs_table(raw)
    m = ReplayRuntimeModel(tables=tables).fit(runs)
    (mean,) = raw["executors_mean"]
    assert m.training_range_["executors"] == pytest.approx((mean, mean))
    assert m._executors(m.runs_).tolist() == pytest.approx(runs["executors"].tolist())


@pytest.mark.parametrize("value,on", [("true", True), ("True", True), (" TRUE ", True), ("false", False)])
def test_the_setting_is_read_as_spark_reads_it(value, on):
    """Spark's boolean settings ignore case and blanks around them (checked on Spark 4.3's
    Utils.isDynamicAllocationEnabled); the runs table had matched the JSON text "true" only."""
    from sparkpredict.features.runs import runs_table

    props = {"spark.dynamicAllocation.enabled": value, "spark.executor.instances": "2"}
    row = {"run_id": "r", "job": "j", "status": "succeeded", "wall_ms": 1000, "input_bytes": 1, "master": "yarn",
           "executors_requested": 2, "executors_max": 7, "executors_mean": 2.43, "executor_cores": 2,
           "task_slots": 14, "properties_json": json.dumps(props)}
    assert runs_table(pd.DataFrame([row]))["executors"].tolist() == [2.43 if on else 2.0]


def test_a_local_masters_dynamic_allocation_setting_is_no_dynamic_allocation(tmp_path):
    """Spark has no dynamic allocation on local[N] (a cluster node's spark-defaults.conf enables it
    for local runs too): the stage features read a local[2] run as 1 executor with 1 slot (the
    driver's mean), where the runs table reads 2, and the advice told to set bounds."""
    from sparkpredict.advise import suggest_executors
    from sparkpredict.features.runs import runs_table
    from sparkpredict.features.stages import config_features

    props = {"spark.master": "local[2]", "spark.dynamicAllocation.enabled": "true"}
    row = {"run_id": "r", "job": "j", "status": "succeeded", "wall_ms": 1000, "input_bytes": 1, "master": "local[2]",
           "executors_requested": 1, "executors_max": 1, "executors_mean": 1.0, "executor_cores": 2,
           "task_slots": 2, "properties_json": json.dumps(props)}
    plain = {**row, "properties_json": json.dumps({"spark.master": "local[2]"})}
    for r in (row, plain):
        f = config_features(r)
        assert (f["executors"], f["executor_cores"], f["task_slots"]) == (2.0, 1.0, 2.0)
        assert runs_table(pd.DataFrame([r]))["executors"].tolist() == [2.0]
    # a history of local runs whose properties enable it: no bounds to set
    runs, stages = history(dyn=True)
    runs["master"] = [f"local[{e}]" for e in runs["executors_requested"]]
    runs["task_slots"] = runs["executors_requested"]
    path = make_store(tmp_path / "s", (runs, stages))
    a = suggest_executors("etl", "30GB", store=path, models={"etl": fast_model((runs, stages))})
    assert not [w for w in a.warnings if "dynamic allocation" in w], a.warnings
    # the same history on a cluster is told
    runs["master"] = "yarn"
    path = make_store(tmp_path / "yarn", (runs, stages))
    a = suggest_executors("etl", "30GB", store=path, models={"etl": fast_model((runs, stages))})
    assert any(w.startswith("the history used dynamic allocation") for w in a.warnings)


def _dry_run(capsys, path: str, master: str) -> tuple[list[str], str]:
    from sparkpredict.cli import main

    assert main(["submit", "--store", path, "--job", "etl", "--executors", "auto", "--input-size", "30GB",
                 "--deadline", "10m", "--dry-run", "--", "--master", master,
                 "--conf", "spark.dynamicAllocation.enabled=true", "job.py"]) == 0
    out = capsys.readouterr()
    import shlex

    return shlex.split(out.out.strip()), out.err


def _confs(cmd: list[str]) -> dict[str, str]:
    return dict(cmd[i + 1].split("=", 1) for i, a in enumerate(cmd) if a == "--conf")


def test_submit_auto_sets_the_bounds_and_gives_a_local_cluster_the_workers_they_need(tmp_path, capsys):
    """`submit --executors auto` under dynamic allocation sets min/maxExecutors, not
    spark.executor.instances. On local-cluster[1,1,1024] the one worker had capped dynamic
    allocation at 1 executor whatever maxExecutors said: it gets maxExecutors workers, as a fixed
    count gets that many."""
    from sparkpredict.advise import suggest_executors
    from sparkpredict.capture.submit import build_command

    path = make_store(tmp_path / "store", history())
    cmd, _ = _dry_run(capsys, path, "yarn")
    a = suggest_executors("etl", "30GB", deadline_s="10m", store=path)
    lo, hi = a.dynamic_allocation
    conf = _confs(cmd)
    assert (conf["spark.dynamicAllocation.minExecutors"], conf["spark.dynamicAllocation.maxExecutors"]) \
        == (str(lo), str(hi))
    assert "spark.executor.instances" not in conf and cmd[cmd.index("--master") + 1] == "yarn"
    assert lo <= a.executors <= hi and hi > 1

    cmd, err = _dry_run(capsys, path, "local-cluster[1,1,1024]")
    conf = _confs(cmd)
    top = int(conf["spark.dynamicAllocation.maxExecutors"])
    assert top > 1 and "spark.executor.instances" not in conf
    assert cmd[cmd.index("--master") + 1] == f"local-cluster[{top},1,1024]"
    assert (f"master local-cluster[1,1,1024] (--master) runs as local-cluster[{top},1,1024]: a local-cluster's "
            f"workers cap dynamic allocation's executors, and maxExecutors={top} needs {top} of them") in err
    # the user's own bound is theirs: the master is left as it is
    args = ["--master", "local-cluster[1,1,1024]", "--conf", "spark.dynamicAllocation.enabled=true",
            "--conf", "spark.dynamicAllocation.maxExecutors=2", "job.py"]
    cmd = build_command(args, store=str(tmp_path / "s"), extra_conf={"spark.dynamicAllocation.maxExecutors": "3"})
    assert cmd[cmd.index("--master") + 1] == "local-cluster[1,1,1024]"
    # without dynamic allocation the bound changes no master
    cmd = build_command(["--master", "local-cluster[1,1,1024]", "job.py"], store=str(tmp_path / "s"),
                        extra_conf={"spark.dynamicAllocation.maxExecutors": "3"})
    assert cmd[cmd.index("--master") + 1] == "local-cluster[1,1,1024]"


def test_submit_auto_keeps_dynamic_allocations_first_count_within_the_advised_bounds(tmp_path, capsys,
                                                                                    monkeypatch):
    """Spark starts dynamic allocation at the largest of minExecutors, initialExecutors and
    spark.executor.instances (Utils.getDynamicAllocationInitialExecutors); YARN and Kubernetes
    refuse one above maxExecutors ("initial executor number 50 must between min executor number
    6 and max executor number 7"). Submit had passed --num-executors 50 beside the advised
    maxExecutors without a word."""
    import shlex

    from sparkpredict.cli import main

    path = make_store(tmp_path / "store", history())
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "conf"))
    (tmp_path / "conf").mkdir()

    def dry_run(*spark_args: str) -> tuple[int, list[str], str]:
        rc = main(["submit", "--store", path, "--job", "etl", "--executors", "auto", "--input-size", "30GB",
                   "--deadline", "10m", "--dry-run", "--", "--master", "yarn",
                   "--conf", "spark.dynamicAllocation.enabled=true", *spark_args, "job.py"])
        out = capsys.readouterr()
        return rc, shlex.split(out.out.strip()), out.err

    rc, cmd, _ = dry_run()
    lo, hi = (int(_confs(cmd)[f"spark.dynamicAllocation.{k}Executors"]) for k in ("min", "max"))
    # the user's own count above the bound outranks submit's --conf: refused, naming it
    for given, option in ((["--num-executors", str(hi + 1)], "--num-executors"),
                          (["--conf", f"spark.dynamicAllocation.initialExecutors={hi + 5}"],
                           "--conf spark.dynamicAllocation.initialExecutors"),
                          (["--conf", f"spark.executor.instances={hi + 1}"], "--conf spark.executor.instances")):
        rc, cmd, err = dry_run(*given)
        assert rc == 2 and not cmd, err
        assert f"{' '.join(given)} starts dynamic allocation at " in err
        assert f"above the advised spark.dynamicAllocation.maxExecutors={hi}" in err
        assert f"drop {option} (dynamic allocation then starts at minExecutors={lo}) or give at most {hi}" in err
    # within the bounds (or below, which Spark ignores): left as given, nothing added
    for n in (hi, 1):
        rc, cmd, err = dry_run("--num-executors", str(n))
        assert rc == 0 and "dynamic allocation at" not in err
        assert cmd[cmd.index("--num-executors") + 1] == str(n) and "spark.executor.instances" not in _confs(cmd)
    # a cluster's spark-defaults.conf: submit's --conf outranks it, so the run gets the bound
    defaults = tmp_path / "conf" / "spark-defaults.conf"
    defaults.write_text(f"spark.executor.instances {hi + 30}\nspark.dynamicAllocation.initialExecutors {hi}\n")
    rc, cmd, err = dry_run()
    assert rc == 0 and _confs(cmd)["spark.executor.instances"] == str(hi)
    assert "spark.dynamicAllocation.initialExecutors" not in _confs(cmd)  # at the bound: left alone
    assert (f"spark.executor.instances={hi + 30} in {defaults} starts dynamic allocation at {hi + 30} executors, "
            f"above the advised spark.dynamicAllocation.maxExecutors={hi}, which YARN and Kubernetes refuse: "
            f"this run sets spark.executor.instances={hi}") in err
