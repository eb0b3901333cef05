"""Sweeps: bad input refused before anything is recorded; a tiny real sweep; resume."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sparkpredict import sweep as S
from sparkpredict import sweep_session as SS
from sparkpredict.errors import InputError, WorkloadError

MB = 1000**2


def _cli(*args: str, env_store: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if env_store:
        env["SPARKPREDICT_STORE"] = env_store
    return subprocess.run([sys.executable, "-m", "sparkpredict", *args], capture_output=True, text=True,
                          env=env, timeout=120, check=False)


def test_parse_lists():
    assert S.parse_list("64MB, 128MB", "sizes") == [64 * MB, 128 * MB]
    assert S.parse_list("1,3-5", "ints") == [1, 3, 4, 5]
    with pytest.raises(InputError, match="executor count"):
        S.parse_list("1,two", "ints")
    with pytest.raises(InputError, match="at least 1"):
        S.parse_list("0,1", "ints")
    with pytest.raises(InputError, match="as a size"):
        S.parse_list("64 furlongs", "sizes")
    # read as every size a user types: 1.5 was swept as 2 bytes, -5MB "cannot be read"
    with pytest.raises(InputError, match="fraction of a byte"):
        S.parse_list("64MB,1.5", "sizes")
    with pytest.raises(InputError, match="must be positive"):
        S.parse_list("-5MB", "sizes")
    # a reversed range is no range: it planned 0 runs, exited 0 and created the store
    with pytest.raises(InputError, match="empty range") as e:
        S.parse_list("1,3-2", "ints")
    assert "2-3" in e.value.fix


def test_plan_orders_repeats_outermost():
    plan = S.plan_sweep("sort", "2MB,1MB", "2,1", repeats=2, master="local")
    assert plan.sizes_bytes == (MB, 2 * MB)
    assert len(plan.combos) == 8
    assert [c.repeat for c in plan.combos] == [0] * 4 + [1] * 4  # an interrupted sweep stays balanced
    assert plan.combos[0].master == "local[1]" and plan.combos[1].master == "local[2]"
    c = plan.combos[0]
    assert c.key("sort") == "sort|1000000|1|0|local[1]|seed=0"


def test_resume_key_holds_what_changes_the_run():
    """The seed always changes the run; executor cores and memory where executors are JVMs of
    their own (on local[N] the tasks run in the driver, so a changed --executor-memory reruns nothing)."""
    def keys(**kw):
        args = {"workload": "sort", "sizes": "1MB", "executors": "1", "master": "local-cluster[{executors},1,2048]"}
        args.update(kw)
        return {c.key("sort") for c in S.plan_sweep(**args).combos}

    base = keys()
    assert base == {"sort|1000000|1|0|local-cluster[1,1,2048]|seed=0|cores=1|memory_mb=1024"}
    assert keys(seed=7) != base
    assert keys(executor_memory_mb=2048) != base  # the master stays the same; the executors do not
    assert len({frozenset(k) for k in (base, keys(master="yarn"), keys(master="yarn", executor_cores=2),
                                       keys(master="yarn", executor_memory_mb=2048))}) == 4
    assert keys(master="local", seed=7) != keys(master="local")
    assert keys(master="local", executor_memory_mb=4096, executor_cores=2) == keys(master="local")


def _recorded(store, *props: dict) -> set[str]:
    import pandas as pd

    from sparkpredict.store import io as store_io

    rows = pd.DataFrame({"run_id": [f"r{i}" for i in range(len(props))], "app_id": [f"r{i}" for i in range(len(props))],
                         "job": ["sort"] * len(props), "status": ["succeeded"] * len(props),
                         "properties_json": [json.dumps(p) for p in props], "updated_ms": [1] * len(props)})
    store_io.open(store, create=True).append({"runs": rows})
    return S.recorded_keys(str(store), "sort")


def test_runs_recorded_before_the_seed_was_in_the_key_still_resume(tmp_path):
    """A key written as workload|bytes|executors|repeat|master is completed from the run's own
    properties: the same sweep resumes, one with another seed or other executors does not."""
    old_local = {S.KEY_SWEEP: "sort|1000000|1|0|local[1]", S.KEY_SEED: "0",
                 "spark.executor.cores": "1", "spark.executor.memory": "1024m"}
    old_yarn = {S.KEY_SWEEP: "sort|1000000|2|0|yarn", S.KEY_SEED: "0",
                "spark.executor.cores": "2", "spark.executor.memory": "4g"}
    no_seed = {S.KEY_SWEEP: "sort|2000000|1|0|local[1]"}  # cannot tell which data: rerun
    recorded = _recorded(tmp_path / "s", old_local, old_yarn, no_seed)

    def todo(**kw):
        return [c for c in S.plan_sweep("sort", **kw).combos if c.key("sort") not in recorded]

    assert todo(sizes="1MB", executors="1", master="local") == []
    assert len(todo(sizes="1MB", executors="1", master="local", seed=7)) == 1
    assert todo(sizes="1MB", executors="2", master="yarn", executor_cores=2, executor_memory_mb=4096) == []
    assert len(todo(sizes="1MB", executors="2", master="yarn", executor_cores=2, executor_memory_mb=2048)) == 1
    assert len(todo(sizes="2MB", executors="1", master="local")) == 1


@pytest.mark.parametrize("kwargs, message", [
    ({"workload": "teragen", "sizes": "8MB", "executors": "1"}, "unknown workload 'teragen'"),
    ({"workload": "wordcount", "sizes": "8MB,500KB", "executors": "1"}, "below the wordcount generator's minimum"),
    ({"workload": "sort", "sizes": "8MB", "executors": "1,2,500"}, "cores"),
    ({"workload": "sort", "sizes": "8MB", "executors": "2", "executor_memory_mb": 10**7}, "MiB is available"),
    ({"workload": "sort", "sizes": "8MB", "executors": "1", "master": "local", "repeats": 0}, "repeats"),
    # refused before a JVM starts, not by Spark's stack trace after it
    ({"workload": "sort", "sizes": "8MB", "executors": "1", "master": "yarn-client"}, "not a Spark master URL"),
    ({"workload": "sort", "sizes": "8MB", "executors": "1", "master": "local[0]"}, "no task threads"),
    ({"workload": "sort", "sizes": "8MB", "executors": "1", "master": "local-cluster[{executors},0,1024]"},
     "no executors, cores or memory"),
    ({"workload": "sort", "sizes": "8MB", "executors": "1", "master": "local-cluster[{executors},{cores},512]"},
     "less than the executors' 1024 MiB"),
    # templates str.format cannot fill: KeyError / IndexError / ValueError before
    ({"workload": "sort", "sizes": "8MB", "executors": "1", "master": "local[{executor}]"}, "unknown placeholder {executor}"),
    ({"workload": "sort", "sizes": "8MB", "executors": "1", "master": "local[{}]"}, "unknown placeholder {}"),
    ({"workload": "sort", "sizes": "8MB", "executors": "1", "master": "local[{executors"}, "cannot read the master template"),
    # a fixed local master runs one setup, whatever the count it is recorded as
    ({"workload": "sort", "sizes": "8MB", "executors": "1,3", "master": "local[2]"}, "runs at 1, 3 executor(s)"),
    ({"workload": "sort", "sizes": "8MB", "executors": "1", "master": "local[*]"}, "as many task threads"),
    ({"workload": "sort", "sizes": "8MB", "executors": "1,2", "master": "local-cluster[2,1,1024]"},
     "starts 2 executor(s) in every run"),
    ({"workload": "sort", "sizes": "8MB", "executors": "1", "master": "local-cluster[{executors},2,1024]"},
     "gives each worker 2 core(s)"),
])
def test_bad_sweeps_are_refused_up_front(kwargs, message):
    with pytest.raises((WorkloadError, InputError)) as e:
        S.plan_sweep(**kwargs)
    assert message in e.value.message
    assert e.value.fix


def test_fixed_masters_that_run_the_counts_asked_for_are_accepted():
    assert [c.master for c in S.plan_sweep("sort", "8MB", "2", master="local[2]").combos] == ["local[2]"]
    assert [c.master for c in S.plan_sweep("sort", "8MB", "2", master="local-cluster[2,1,1024]").combos] \
        == ["local-cluster[2,1,1024]"]
    plan = S.plan_sweep("sort", "8MB", "1,2", master="yarn")  # spark.executor.instances sets the count
    assert [c.master for c in plan.combos] == ["yarn", "yarn"]


def test_capacity_check_allows_what_the_machine_can_start():
    S.check_capacity("local-cluster[2,1,1024]", 2, 1, 1024)
    S.check_capacity("yarn", 500, 4, 8192)  # a cluster's capacity is the cluster's business
    for url in ("local", "local[*]", "local[2,3]", "spark://a:7077,b:7077", "k8s://https://k:443"):
        S.check_capacity(url, 1, 1, 1024)
    with pytest.raises(WorkloadError, match="task threads"):
        S.check_capacity(f"local[{64 * (os.cpu_count() or 1)}]", 1, 1, 1024)


@pytest.mark.parametrize("args, message", [
    (["--workload", "nope", "--sizes", "8MB"], "unknown workload 'nope'"),
    (["--workload", "sort", "--sizes", "100KB"], "below the sort generator's minimum"),
    (["--workload", "sort", "--sizes", "8MB", "--executors", "1-400"], "asks for"),
    (["--workload", "sort", "--sizes", "8MB", "--executors", "2-1"], "empty range"),
    (["--workload", "sort", "--sizes", "8MB", "--master", "local[{executor}]"], "unknown placeholder"),
    (["--workload", "sort", "--sizes", "8MB", "--master", "local[{}]"], "unknown placeholder"),
    (["--workload", "sort", "--sizes", "8MB", "--master", "local[0]"], "no task threads"),
    (["--workload", "sort", "--sizes", "8MB", "--executors", "1,3", "--master", "local[2]"], "local[{executors}]"),
])
def test_cli_bad_input_one_clear_line_and_nothing_recorded(tmp_path, args, message):
    store = tmp_path / "store"
    r = _cli("sweep", *args, "--store", str(store), "--cache", str(tmp_path / "cache"))
    assert r.returncode == 2
    assert message in r.stderr
    assert "Traceback" not in r.stderr
    assert r.stderr.count("error:") == 1 and "fix:" in r.stderr
    assert not store.exists() and not (tmp_path / "cache").exists()


def test_eta_fits_fixed_plus_per_byte_cost():
    todo = [S.Combo(4 * MB, 1, 0, "local[1]"), S.Combo(8 * MB, 1, 0, "local[1]")]
    assert S._eta([], todo) is None
    eta = S._eta([(MB, 3.0), (2 * MB, 4.0)], todo)  # 2 s + 1 s/MB
    assert eta == pytest.approx(6.0 + 10.0)


@pytest.mark.spark
def test_tiny_real_sweep_records_each_run_and_resumes(spark_app, tmp_path, monkeypatch):
    """Four applications recorded by the listener; a rerun skips them; a wider plan adds only
    new runs, compacting the store between them; resuming reads the compacted store."""
    from sparkpredict.store import compact as C
    from sparkpredict.store import io as store_io

    store, cache = tmp_path / "store", tmp_path / "cache"
    seen: list[tuple[int, int]] = []
    plan = S.plan_sweep("wordcount", "1MB,2MB", "1,2", master="local")
    res = S.run_sweep(plan, store=store, cache_dir=cache, workdir=tmp_path / "work",
                      progress=lambda d, t, el, eta, lab: seen.append((d, t)), tasks=False)
    assert [o.status for o in res.outcomes] == ["succeeded"] * 4, [o.error for o in res.outcomes]
    assert seen[-1] == (4, 4)
    assert res.compactions == []  # 256 batches are far off

    runs = store_io.open(store).runs()
    assert len(runs) == 4 and set(runs["status"]) == {"succeeded"}
    assert set(runs["job"]) == {"wordcount"}
    assert len(set(runs["app_id"])) == 4  # each combination its own application
    sizes = {}
    for c in plan.combos:
        d = cache / f"wordcount-s0-{c.size_bytes}B"
        sizes[c.size_bytes] = sum(p.stat().st_size for p in d.glob("part-*"))
    for _, r in runs.iterrows():
        key = json.loads(r["properties_json"])[S.KEY_SWEEP]
        _, size, e, _rep, master, seed = key.split("|")
        assert seed == "seed=0"
        assert r["input_bytes"] == sizes[int(size)] and r["input_bytes_source"] == "declared"
        assert r["executors_requested"] == int(e) and r["master"] == master == f"local[{e}]"

    again = S.run_sweep(plan, store=store, cache_dir=cache, workdir=tmp_path / "work", tasks=False)
    assert len(again.skipped) == 4 and not again.ran
    assert len(store_io.open(store).runs()) == 4

    # an interrupted sweep resumes: the wider plan runs only what is missing
    wider = S.plan_sweep("wordcount", "1MB,2MB", "1-3", master="local")
    monkeypatch.setattr(C, "AUTO_BATCHES", 1)  # however many batches a run commits
    more = S.run_sweep(wider, store=store, cache_dir=cache, workdir=tmp_path / "work", tasks=False)
    assert len(more.skipped) == 4 and [o.combo.executors for o in more.ran] == [3, 3]
    assert len(store_io.open(store).runs()) == 6
    # after each of the two runs: the first merges the earlier runs' batches and its own, the
    # second its own with the compacted one (under half the target size)
    assert len(more.compactions) == 2 and len(store_io.open(store).visible_marks()) == 1

    # another seed is other data: nothing of it is recorded yet (the seed was not in the key)
    seeded = S.run_sweep(S.plan_sweep("wordcount", "1MB", "1", master="local", seed=7), store=store,
                         cache_dir=cache, workdir=tmp_path / "work", tasks=False)
    assert not seeded.skipped and [o.status for o in seeded.ran] == ["succeeded"]
    assert len(store_io.open(store).runs()) == 7


@pytest.mark.spark
def test_failed_run_is_recorded_failed_and_retried(spark_app, tmp_path):
    """A run that fails is recorded with status failed (not succeeded) and redone by the next sweep."""
    from sparkpredict.store import io as store_io

    store, cache = tmp_path / "store", tmp_path / "cache"
    plan = S.plan_sweep("wordcount", "1MB", "1", master="local")
    bad = S.run_sweep(plan, store=store, cache_dir=cache, workdir=tmp_path / "w", tasks=False,
                      extra_conf={"spark.sql.shuffle.partitions": "0"})  # invalid: the job cannot run
    assert [o.status for o in bad.outcomes] == ["failed"] and bad.outcomes[0].error
    runs = store_io.open(store).runs()
    assert list(runs["status"]) == ["failed"]
    good = S.run_sweep(plan, store=store, cache_dir=cache, workdir=tmp_path / "w", tasks=False)
    assert [o.status for o in good.outcomes] == ["succeeded"]
    assert sorted(store_io.open(store).runs()["status"]) == ["failed", "succeeded"]


@pytest.mark.spark
def test_a_fresh_process_warms_up_without_recording_the_warm_up(tmp_path):
    """The CLI in a fresh process (as the demo and a newcomer run it): the warm-up run before
    the first recorded one is recorded only into a scratch store, which is then deleted; the
    store holds the sweep's runs and nothing else."""
    from sparkpredict.store import io as store_io

    store, work = tmp_path / "store", tmp_path / "store" / ".." / "sweep-work"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    r = subprocess.run([sys.executable, "-m", "sparkpredict", "sweep", "--workload", "wordcount",
                        "--sizes", "1MB", "--executors", "1", "--repeats", "2", "--master", "local",
                        "--store", str(store), "--cache", str(tmp_path / "cache"), "--no-tasks"],
                       capture_output=True, text=True, env=env, timeout=600, check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    runs = store_io.open(store).runs()
    assert len(runs) == 2 and set(runs["job"]) == {"wordcount"} and set(runs["status"]) == {"succeeded"}
    assert not any("warmup" in str(n) for n in runs["app_name"])
    assert (work / "spark-local").is_dir() and not list((work / "spark-local").glob("warmup-store-*"))
    # Spark's start-up WARNs (loopback host, native Hadoop, local dirs, the shell's log level)
    # would bury the progress bar: the sweep's driver JVM logs Spark's errors only
    spark_lines = [line for line in r.stderr.splitlines()
                   if " WARN " in line or "log4j profile" in line or "default log level" in line]
    assert not spark_lines, spark_lines


def test_a_users_own_log4j_configuration_is_kept(tmp_path, monkeypatch):
    monkeypatch.delenv("LOG4J_CONFIGURATION_FILE", raising=False)
    monkeypatch.delenv("SPARK_CONF_DIR", raising=False)
    monkeypatch.delenv("SPARK_HOME", raising=False)
    assert not SS._user_log_config({})
    assert SS._user_log_config({"spark.driver.extraJavaOptions": "-Dlog4j2.configurationFile=/x.properties"})
    (tmp_path / "log4j2.properties").write_text("rootLogger.level = info\n")
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    assert SS._user_log_config({})
    assert SS.QUIET_SPARK_LOG.is_file()   # shipped with the package (setup.cfg package_data)


def test_a_log4j_configuration_is_looked_for_where_spark_submit_reads_it(tmp_path, monkeypatch):
    # spark-submit puts one conf folder on the driver's classpath: $SPARK_CONF_DIR, else the Spark
    # home's conf/, which for a pip pyspark is the package's own folder
    from sparkpredict.capture import submit_args

    for var in ("LOG4J_CONFIGURATION_FILE", "SPARK_CONF_DIR", "SPARK_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(SS, "_jvm_started", lambda: False)

    def spark_home(path: Path, log4j: bool) -> Path:
        (path / "bin").mkdir(parents=True)
        (path / "bin" / "spark-submit").write_text("")
        (path / "conf").mkdir()
        if log4j:
            (path / "conf" / "log4j2.properties").write_text("rootLogger.level = info\n")
        return path

    def quieted() -> str | None:
        with SS.quiet_spark_log({}):
            return os.environ.get("LOG4J_CONFIGURATION_FILE")

    pip = spark_home(tmp_path / "site-packages" / "pyspark", log4j=False)
    monkeypatch.setattr(submit_args, "pyspark_home", lambda: pip)
    assert not SS._user_log_config({}) and quieted() == str(SS.QUIET_SPARK_LOG)
    # the pip pyspark's conf/ is the user's too: kept
    (pip / "conf" / "log4j2.properties").write_text("rootLogger.level = info\n")
    assert SS._user_log_config({}) and quieted() is None
    # $SPARK_HOME's conf/ instead of the package's
    monkeypatch.setenv("SPARK_HOME", str(spark_home(tmp_path / "spark-4.1", log4j=False)))
    assert not SS._user_log_config({}) and quieted() == str(SS.QUIET_SPARK_LOG)
    monkeypatch.setenv("SPARK_HOME", str(spark_home(tmp_path / "spark-4.1-own", log4j=True)))
    assert SS._user_log_config({})
    # and $SPARK_CONF_DIR instead of both: the Spark home's file is not read there, so Spark
    # would log at its own defaults, and the quiet configuration is used
    (tmp_path / "cluster-conf").mkdir()
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "cluster-conf"))
    assert not SS._user_log_config({}) and quieted() == str(SS.QUIET_SPARK_LOG)
    (tmp_path / "cluster-conf" / "log4j2.properties").write_text("rootLogger.level = info\n")
    assert SS._user_log_config({}) and quieted() is None
    assert "LOG4J_CONFIGURATION_FILE" not in os.environ  # set for the JVM's start alone


_QUIET_LISTENER_APP = """
import sys
from pathlib import Path
from sparkpredict import sweep_session
from sparkpredict.capture.listener import listener_conf
conf = listener_conf(store=sys.argv[1], job="quiet")
conf["spark.sparkpredict.hostSampleIntervalMs"] = "often"   # warned of, and its default used
conf["spark.ui.enabled"] = "false"
spark = sweep_session._start_session("local[1]", "quiet", conf)
print(spark.sparkContext.parallelize(range(10), 2).sum())
spark.stop()
"""


@pytest.mark.spark
def test_quiet_spark_logs_still_show_the_listeners_warnings_and_errors(listener_jar, tmp_path):
    """The sweep's quiet log4j configuration drops Spark's WARNs, not sparkpredict's own: a bad
    host-sample interval (a WARN: its default is used) and a store that cannot be written (an
    ERROR) both reach stderr."""
    blocker = tmp_path / "blocked"
    blocker.write_text("a file where the store's parent folder should be")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    env.pop("LOG4J_CONFIGURATION_FILE", None)
    r = subprocess.run([sys.executable, "-c", _QUIET_LISTENER_APP, str(blocker / "store")],
                       capture_output=True, text=True, env=env, timeout=300, check=False)
    assert r.returncode == 0 and r.stdout.split() == ["45"], r.stderr[-3000:]
    ours = [line for line in r.stderr.splitlines() if "sparkpredict:" in line or "sparkpredict listener" in line]
    assert any(" WARN " in line and "hostSampleIntervalMs=often is not milliseconds" in line
               for line in ours), r.stderr[-3000:]
    assert any(" ERROR " in line and "cannot write to store" in line for line in ours), r.stderr[-3000:]
    spark_warns = [line for line in r.stderr.splitlines() if " WARN " in line and "sparkpredict" not in line]
    assert not spark_warns, spark_warns


#: A sweep whose job runs until it is cancelled, in the warm-up (argv[3] "warmup") or in the first
#: run ("run"), over the executor counts argv[4]; it prints RUNNING once that job started.
SIGNALLED_SWEEP = """
import sys
from pathlib import Path
from sparkpredict import workloads
from sparkpredict.cli import main

def run(self, spark, data_path, seed=0):
    if spark.sparkContext.appName.endswith("-warmup") != (sys.argv[3] == "warmup"):
        return {}
    print("RUNNING", flush=True)
    # a job that runs until it is cancelled (hours of codegen'd sums)
    return {"sum": spark.range(0, 10**13, numPartitions=2).selectExpr("sum(id)").collect()}

workloads.Workload.run = run
sys.exit(main(["sweep", "--workload", "sort", "--sizes", "1MB", "--executors", sys.argv[4], "--master", "local",
               "--store", sys.argv[1], "--cache", sys.argv[2], "--no-tasks"]))
"""


@pytest.mark.spark
def test_ctrl_c_stops_a_sweep_with_one_tidy_line(tmp_path):
    """Ctrl-C (SIGINT to the process group, as a terminal sends it) while a run's job runs:
    PySpark's handler cancelled the jobs on the py4j connection the main thread was reading
    ("reentrant call", Py4JNetworkError and KeyboardInterrupt tracebacks), then the context was
    stopped under running tasks (Spark's ERRORs). Now: the tidy line, exit 130, the run failed."""
    import signal
    import time

    from sparkpredict.store import io as store_io

    store = tmp_path / "store"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    p = subprocess.Popen([sys.executable, "-c", SIGNALLED_SWEEP, str(store), str(tmp_path / "cache"), "run",
                          "1,2"],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "RUNNING"
        time.sleep(1.0)  # the job's tasks are running
        os.killpg(p.pid, signal.SIGINT)
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    assert p.returncode == 130, err[-3000:]
    assert "interrupted: runs finished so far are recorded; rerun the same command to resume" in err
    noise = [ln for ln in err.splitlines() if "Traceback" in ln or "ERROR" in ln or "Error" in ln
             or "Exception" in ln or "KeyboardInterrupt" in ln]
    assert not noise, err[-3000:]
    runs = store_io.open(store).runs()
    assert list(runs["status"]) == ["failed"] and list(runs["executors_requested"]) == [1]


def test_a_negative_seed_is_refused_before_the_sweep_starts(tmp_path):
    """numpy's generators refuse a negative seed, but only once the first run generated its data:
    the header and progress printed, then a ValueError traceback and exit 1."""
    with pytest.raises(InputError) as e:
        S.plan_sweep("sort", "2MB", "1", master="local", seed=-1)
    assert "seed -1" in e.value.message and "--seed 0 or more" in e.value.fix
    assert S.plan_sweep("sort", "2MB", "1", master="local", seed=7).combos[0].seed == 7
    store, cache = tmp_path / "store", tmp_path / "cache"
    r = _cli("sweep", "--workload", "sort", "--sizes", "2MB", "--seed", "-1", "--executors", "1",
             "--master", "local", "--store", str(store), "--cache", str(cache))
    assert r.returncode == 2, r.stderr[-2000:]
    assert r.stderr.splitlines()[0].startswith("error: seed -1") and "fix:" in r.stderr
    assert "Traceback" not in r.stderr and "sweep sort" not in r.stderr
    assert not store.exists() and not cache.exists()


def test_an_empty_item_in_a_list_is_refused_not_dropped(tmp_path):
    """`--executors 1,,2` planned 1,2 silently (and `--sizes 2MB,,4MB` 2MB,4MB): a value lost
    while editing the command. simulate --executors read its list the same way."""
    from sparkpredict.units import parse_counts  # every command's list of counts

    for text, kind, what, fix in (("1,,2", "ints", "executor counts", "1,2"), ("2MB,,4MB", "sizes", "sizes", "2MB,4MB"),
                                  ("1,2,", "ints", "executor counts", "1,2")):
        with pytest.raises(InputError) as e:
            S.parse_list(text, kind)
        assert e.value.message == f"the list of {what} {text!r} has an empty item"
        assert e.value.fix.endswith(f"e.g. {fix}")
    with pytest.raises(InputError, match="empty item"):
        S.plan_sweep("sort", "2MB", "1,,2", master="local")
    assert S.parse_list(" 1 , 2 ", "ints") == [1, 2]  # spaces around items are still fine
    with pytest.raises(InputError, match="the list of executor counts '1,,2' has an empty item"):
        parse_counts("1,,2")
    assert parse_counts("1, 2") == [1, 2]
    # one syntax in every command: sweep took "1-3", suggest and simulate refused it
    assert parse_counts("1-3,8") == [1, 2, 3, 8]
    from sparkpredict.advice_args import check_executor_counts, cli_flags

    assert check_executor_counts("2-4,3") == [2, 3, 4]
    with cli_flags(), pytest.raises(InputError) as e:
        check_executor_counts("4-2")
    assert e.value.message == "--executor-counts: '4-2' is an empty range of executor counts"
    store = tmp_path / "store"
    r = _cli("sweep", "--workload", "sort", "--sizes", "2MB", "--executors", "1,,2", "--master", "local",
             "--store", str(store), "--cache", str(tmp_path / "cache"))
    assert r.returncode == 2 and "has an empty item" in r.stderr and "fix:" in r.stderr, r.stderr[-2000:]
    assert not store.exists() and not (tmp_path / "cache").exists()


def test_a_sweep_runs_the_workload_settings_its_jobs_script_runs(tmp_path):
    """A 4 MB wordcount from jobs/wordcount.py ran Spark's defaults (604 tasks, 56 s) and a
    sweep's 4 partitions (18 tasks, ~2 s), both recorded as job wordcount: one definition now."""
    from sparkpredict import workloads as W

    plan = S.plan_sweep("wordcount", "4MB,16MB", "1", master="local")
    for combo, nbytes in zip(plan.combos, (3_999_996, 15_999_990)):
        conf = S.run_conf(plan, combo, nbytes, tmp_path)
        shared = W.spark_settings(nbytes)
        assert {k: conf[k] for k in shared} == shared
        assert W.script_settings(nbytes, set()) == {**shared, "spark.sparkpredict.inputBytes": str(nbytes)}
    assert W.spark_settings(3_999_996) == {"spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "4",
                                           "spark.sql.files.maxPartitionBytes": str(1024 * 1024)}
    assert W.spark_settings(15_999_990)["spark.sql.shuffle.partitions"] == "16"


def test_the_sweep_progress_bar_says_nothing_is_left_instead_of_a_bar_of_0_of_0_runs():
    import io

    from sparkpredict.cli.sweep import ProgressBar

    out = io.StringIO()
    bar = ProgressBar(out, width=4)
    bar(0, 0, 0.0, None, "12 runs already recorded")
    bar(1, 2, 3.0, 3.0, "sort 64 MB x 2")
    assert out.getvalue().splitlines() == ["nothing left to run: 12 runs already recorded",
                                           "[##..] 1/2 runs  3.0s elapsed  ETA 3.0s  sort 64 MB x 2"]
