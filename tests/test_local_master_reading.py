"""One reading of a run on a local master, however it was started.

A local master runs one driver-executor of T task threads, and the listener records it as such
(``executor_cores = task_slots = T``, ``executors_max = 1``, ``executors_requested`` =
spark.executor.instances, else 1). The product maps E executors of C cores onto ``local[E x C]``
(``submit --executors E``, ``--executors auto``; C = ``--executor-cores``, default 1) and a
sweep's ``--master local`` onto ``local[E]``; the runs table, ``store summary``, the stage
features and the replay timelines read a local run back that way, whatever properties were set.

The properties below are those the runs of /tmp/rv1 (a reviewer's stores) and tests/data
recorded on each path, with the noise (class paths, JVM options) left out.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from sparkpredict.features.runs import (
    executors_and_cores,
    local_run_executors,
    runs_table,
)
from sparkpredict.store import io as store_io
from sparkpredict.store import schema as S

DATA = Path(__file__).parent / "data"

# submit --executors 2 -- --master 'local[2]' job.py  (local-1796123157082)
SUBMIT_2 = {"spark.executor.instances": "2", "spark.master": "local[2]", "spark.submit.deployMode": "client"}
# submit --job tinyjob -- --master 'local[2]' tiny.py, no --executors  (local-1796124119106)
SUBMIT_NO_COUNT = {"spark.master": "local[2]", "spark.submit.deployMode": "client"}
# a session started by hand with the listener attached, master local[2]  (local-1796123690238)
HAND = {"spark.master": "local[2]", "spark.submit.deployMode": "client"}
# sparkpredict sweep --master local --executors 2  (local-1796123639978)
SWEEP_2 = {"spark.dynamicAllocation.enabled": "false", "spark.executor.cores": "1",
           "spark.executor.instances": "2", "spark.master": "local[2]",
           "spark.submit.deployMode": "client"}


def _row(run_id: str, props: dict, threads: int, *, master: str | None = None, **over) -> dict:
    """A succeeded runs row as the listener writes it for a local master of ``threads`` threads."""
    master = master or props["spark.master"]
    row: dict = dict.fromkeys(S.TABLES["runs"].names)
    row.update({
        "run_id": run_id, "app_id": run_id, "app_name": "job", "job": "job", "status": "succeeded",
        "master": master, "start_ms": 1_000, "end_ms": 11_000, "wall_ms": 10_000,
        "executors_requested": int(props.get("spark.executor.instances", 1)),
        "executors_max": 1, "executors_mean": 1.0, "executor_cores": threads,
        "executor_memory_mb": 1024, "task_slots": threads, "input_bytes": 2**20,
        "input_bytes_source": "declared", "num_tasks": 3, "num_failed_tasks": 0,
        "properties_json": json.dumps({**props, "spark.master": master}, sort_keys=True),
        "source": "listener", "schema_version": S.SCHEMA_VERSION, "updated_ms": 11_000,
    })
    row.update(over)
    return row


def _read(rows: list[dict], tmp_path) -> pd.DataFrame:
    """The runs table of a store holding ``rows``, indexed by run_id."""
    st = store_io.open(tmp_path / "store", create=True)
    st.append({"runs": pd.DataFrame(rows)})
    return runs_table(st).set_index("run_id")


def _shape(t: pd.DataFrame, run_id: str) -> tuple[float, float]:
    return float(t.loc[run_id, "executors"]), float(t.loc[run_id, "executor_cores"])


def test_one_local_2_run_reads_as_2_one_core_executors_on_every_path(tmp_path, capsys):
    """The reviewer's three local[2] runs, and the sweep's: each ran 2 task threads, and
    `submit --executors auto` advising 2 runs local[2] again. Before, the two without
    spark.executor.instances read as 1 executor of 2 cores, so one job's history mixed both
    readings and an advice of 1 executor ran on local[1], half the threads."""
    rows = [_row("submit-2", SUBMIT_2, 2), _row("submit-no-count", SUBMIT_NO_COUNT, 2),
            _row("hand", HAND, 2), _row("sweep-2", SWEEP_2, 2)]
    t = _read(rows, tmp_path)
    for rid in ("submit-2", "submit-no-count", "hand", "sweep-2"):
        assert _shape(t, rid) == (2.0, 1.0), rid
    # the stage features and replay timelines read one run the same way
    for r in rows:
        assert local_run_executors(r["master"], r["executors_requested"], r["task_slots"],
                                   r["properties_json"]) == (2.0, 1.0)
        # a row without properties: 1 requested is the listener's default
        assert local_run_executors(r["master"], r["executors_requested"], r["task_slots"]) == (2.0, 1.0)
    # store summary lists the same executors as the runs table
    from sparkpredict.cli import main

    assert main(["store", "summary", "--store", str(tmp_path / "store"), "--json"]) == 0
    latest = {r["run_id"]: r["executors"] for r in json.loads(capsys.readouterr().out)["latest"]}
    assert latest == {"submit-2": 2, "submit-no-count": 2, "hand": 2, "sweep-2": 2}


@pytest.mark.parametrize("cores", [1, 2, 3])
@pytest.mark.parametrize("executors", [1, 2, 3, 4])
def test_submit_runs_read_back_as_the_executors_submit_asked_for(executors, cores):
    """`submit --executors E --executor-cores C` (and `--executors auto` advising E) runs the
    master that local_master_for makes of E, and sets spark.executor.instances=E: the runs
    table reads that run back as E executors of C cores."""
    from sparkpredict.capture.submit_args import local_master_for
    from sparkpredict.config import LOCAL_MASTER

    for given in ("local[1]", "local[*]", "local[1,4]"):
        change = local_master_for(["--master", given, "--executor-cores", str(cores), "job.py"], executors)
        master = change.new if change else given
        threads = int(LOCAL_MASTER.fullmatch(master).group(1))
        props = {"spark.executor.instances": str(executors), "spark.executor.cores": str(cores),
                 "spark.master": master}
        r = _row("r", props, threads)
        e, c = executors_and_cores(pd.DataFrame([r]))
        assert (e[0], c[0]) == (executors, cores), master
        # a hand-attached session of that master and cores, with no count set, reads the same
        hand = _row("h", {"spark.executor.cores": str(cores), "spark.master": master}, threads)
        e, c = executors_and_cores(pd.DataFrame([hand]))
        assert (e[0], c[0]) == (executors, cores), master


@pytest.mark.parametrize("cores", [1, 2])
def test_sweep_local_runs_read_as_the_sweeps_one_core_executors(cores, tmp_path):
    """`sweep --master local --executors 1-3 --executor-cores C` runs local[E] with
    spark.executor.instances=E and spark.executor.cores=C (run_conf): E one-core executors,
    as the sweep records them (the cores change nothing on a local master)."""
    from sparkpredict.config import LOCAL_MASTER
    from sparkpredict.sweep import plan_sweep, run_conf

    plan = plan_sweep("wordcount", "4MB", "1-3", master="local", executor_cores=cores)
    rows = []
    for combo in plan.combos:
        conf = run_conf(plan, combo, combo.size_bytes, tmp_path)
        props = {k: v for k, v in conf.items() if k.startswith("spark.executor.") or k == "spark.dynamicAllocation.enabled"}
        threads = int(LOCAL_MASTER.fullmatch(combo.master).group(1))
        rows.append(_row(f"e{combo.executors}", {**props, "spark.master": combo.master}, threads))
    e, c = executors_and_cores(pd.DataFrame(rows))
    assert list(e) == [1, 2, 3] and list(c) == [1, 1, 1]


def test_local_star_and_local_n_f_read_from_their_threads(tmp_path):
    """local[*] is resolved at run time: the store records the machine's cores as the driver's
    cores and task slots (4 in the sparklens log, 2 on this project's VM). local[N,F] runs N
    threads (F: task failures allowed). `local` is one thread."""
    star = {"spark.master": "local[*]", "spark.executor.id": "driver"}
    rows = [
        _row("star", star, 4),
        _row("star-instances", {**star, "spark.executor.instances": "4"}, 4),
        _row("nf", {"spark.master": "local[3,2]"}, 3),
        _row("nf-cores", {"spark.master": "local[4,2]", "spark.executor.cores": "2"}, 4),
        _row("bare", {"spark.master": "local"}, 1),
        # no executor was ever seen (task_slots null): the master's N is the threads
        _row("no-slots", {"spark.master": "local[3]"}, 3, task_slots=None, executor_cores=None),
        # local[*] without task slots: the threads are unknown, the row keeps what was recorded
        _row("star-unknown", star, 4, task_slots=None, executor_cores=None),
    ]
    t = _read(rows, tmp_path)
    assert _shape(t, "star") == _shape(t, "star-instances") == (4.0, 1.0)
    assert _shape(t, "nf") == (3.0, 1.0)
    assert _shape(t, "nf-cores") == (2.0, 2.0)
    assert _shape(t, "bare") == (1.0, 1.0)
    assert _shape(t, "no-slots") == (3.0, 1.0)
    assert t.loc["star-unknown", "executors"] == 1.0 and pd.isna(t.loc["star-unknown", "executor_cores"])


def test_counts_a_local_master_ignores_change_nothing(tmp_path):
    """Spark ignores spark.executor.instances and dynamic allocation on a local master: a count
    that submit or a sweep would not have set there is read from the threads, not taken."""
    rows = [
        _row("more-than-threads", {"spark.master": "local[1]", "spark.executor.instances": "3"}, 1),
        # submit --executors 2 would have run local[2]: local[4] is 4 one-core executors
        _row("hand-set", {"spark.master": "local[4]", "spark.executor.instances": "2"}, 4),
        _row("uneven-cores", {"spark.master": "local[3]", "spark.executor.cores": "2"}, 3),
        # executors_mean is the driver's 1: not the executors the run had
        _row("dynamic", {"spark.master": "local[2]", "spark.dynamicAllocation.enabled": "true"}, 2),
    ]
    t = _read(rows, tmp_path)
    assert _shape(t, "more-than-threads") == (1.0, 1.0)
    assert _shape(t, "hand-set") == (4.0, 1.0)
    assert _shape(t, "uneven-cores") == (3.0, 1.0)
    assert _shape(t, "dynamic") == (2.0, 1.0)


def test_local_cluster_keeps_its_real_executors(tmp_path):
    """local-cluster[N,C,M] starts N executor JVMs of C cores: read as any cluster (rv1's
    app-20261201110708-0000 and a 2-core variant)."""
    lc = {"spark.executor.instances": "2", "spark.master": "local-cluster[2,1,1024]",
          "spark.submit.deployMode": "client"}
    rows = [_row("lc", lc, 1, executors_max=2, executors_mean=2.0, task_slots=2),
            _row("lc2", {**lc, "spark.master": "local-cluster[1,2,1024]", "spark.executor.instances": "1",
                         "spark.executor.cores": "2"}, 2, task_slots=2)]
    t = _read(rows, tmp_path)
    assert _shape(t, "lc") == (2.0, 1.0)
    assert _shape(t, "lc2") == (1.0, 2.0)
    assert local_run_executors("local-cluster[2,1,1024]", 2, 2, json.dumps(lc)) is None


def test_committed_history_and_event_logs_read_as_the_convention(tmp_path):
    """tests/data/history was recorded by `sweep --master local` (local[E], instances=E):
    unchanged, E one-core executors. The Spark 4 logs ran local[2] with no count set, read
    before as 1 executor of 2 cores: now 2 of 1, as `submit --executors 2` would run them."""
    raw = store_io.open(DATA / "history").runs()
    t = runs_table(raw)
    ok = raw[raw["status"] == "succeeded"].set_index("run_id").loc[t["run_id"]]
    assert len(t) == 72
    assert list(t["executors"]) == list(ok["executors_requested"].astype(float))
    assert set(t["executors"]) == {1.0, 2.0, 3.0} and set(t["executor_cores"]) == {1.0}

    from sparkpredict.capture.eventlog_ingest import ingest_event_logs

    ingest_event_logs([DATA / "eventlogs" / "spark4" / "local-1795969313432"], tmp_path / "ev")
    raw = store_io.open(tmp_path / "ev").runs()
    assert list(raw["master"]) == ["local[2]"] and list(raw["executors_requested"]) == [1]
    t = runs_table(raw)
    assert (t["executors"].iloc[0], t["executor_cores"].iloc[0]) == (2.0, 1.0)


def _local_run(run_id: str, threads: int, t0: int, props: dict | None = None):
    """(run, stages, tasks) of a word count on local[threads] as the listener records it: one
    driver-executor of ``threads`` cores, 1 requested (no spark.executor.instances)."""
    from synthetic_runs import MB, make_run, wordcount_stages

    run, stages, tasks = make_run(run_id, "wc", wordcount_stages(256 * MB, threads, 1), threads, 1,
                                  256 * MB, t0=t0)
    master = f"local[{threads}]"
    run.update(master=master, executors_requested=1, executors_max=1, executors_mean=1.0,
               executor_cores=threads, task_slots=threads,
               properties_json=json.dumps({**(props or {}), "spark.master": master}))
    for t in tasks:
        t["executor_id"] = "driver"
    return run, stages, tasks


def test_the_replay_counts_local_runs_as_the_runs_table_does():
    """local[1] and local[2] runs without spark.executor.instances are 1 and 2 one-core executors
    in the runs table. The replay had read both as 1 (requested, else the driver-executor held),
    so at 1 executor it replayed the faster local[2] run on one thread (the lower middle of two
    tied repeats), fitted no driver-time line (one count), and its leave-one-out asked each run
    at 1 executor of its recorded 2 cores."""
    from synthetic_runs import T0, tables

    from sparkpredict.models.replay import ReplayRuntimeModel

    tb = tables([_local_run("l1", 1, T0), _local_run("l2", 2, T0 + 10**7)])
    table = runs_table(tb["runs"]).set_index("run_id")
    model = ReplayRuntimeModel(tables=tb).fit(tb["runs"])
    assert dict(model._executors(model.runs_)) == dict(table["executors"]) == {"l1": 1.0, "l2": 2.0}
    assert model.training_range_["executors"] == (1.0, 2.0)
    for e, ref in ((1, "l1"), (2, "l2")):
        assert model._reference("wc", 256 * 2**20, e) == ref
    # at a recorded run's own count and size the replay gives that run back
    q = pd.DataFrame({"job": ["wc", "wc"], "input_bytes": [256 * 2**20] * 2, "executors": [1, 2]})
    walls = tb["runs"].set_index("run_id")["wall_ms"] / 1000
    assert model.predict(q) == pytest.approx([walls["l1"], walls["l2"]], rel=0.02)


def test_a_local_run_with_its_cores_set_reads_alike_in_every_model():
    """local[4] with spark.executor.cores=2 and no count is 2 executors of 2 cores in the runs
    table; the replay timeline and the stage features had read it from the recorded count alone
    (1 requested says nothing), as 4 of 1."""
    from synthetic_runs import T0, tables

    from sparkpredict.features.stages import config_features
    from sparkpredict.models.timeline import Timeline

    tb = tables([_local_run("l4", 4, T0, {"spark.executor.cores": "2"})])
    table = runs_table(tb["runs"])
    assert (table["executors"][0], table["executor_cores"][0]) == (2.0, 2.0)
    run = tb["runs"].iloc[0]
    f = config_features(run)
    assert (f["executors"], f["executor_cores"]) == (2.0, 2.0)
    tl = Timeline.from_tables(tb["runs"], tb["stages"], tb["tasks"], "l4")
    assert (tl.executors, tl.cores) == (2, 2)


def test_recorded_local_1_and_2_runs_are_replayed_at_their_own_counts(spark_app, tmp_path):
    """Real runs on local[1] and local[2], no executor count set (a session started by hand):
    the listener stores both as 1 executor (requested 1, one driver-executor held). The runs
    table reads 1 and 2; the replay picks its reference run and its span in the same counts."""
    from sparkpredict.models.replay import ReplayRuntimeModel

    store = tmp_path / "store"
    for master in ("local[1]", "local[2]"):
        with spark_app(store, job="loc", master=master) as spark:
            spark.range(0, 2_000_000, numPartitions=4).selectExpr("sum(hash(id)) as s").collect()
    raw = store_io.open(store).runs()
    assert sorted(raw["executors_requested"]) == [1, 1] and sorted(raw["executors_max"]) == [1, 1]
    table = runs_table(store)
    by_master = dict(zip(raw["master"], raw["run_id"]))
    assert dict(zip(table["run_id"], table["executors"])) == {by_master["local[1]"]: 1.0, by_master["local[2]"]: 2.0}
    model = ReplayRuntimeModel(store=str(store)).fit(table)
    assert model.training_range_["executors"] == (1.0, 2.0)
    size = float(table["input_bytes"].iloc[0])
    for e, master in ((1, "local[1]"), (2, "local[2]")):
        assert model._reference("loc", size, e) == by_master[master]
