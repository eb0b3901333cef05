"""``sparkpredict submit`` of a JVM application (a Java jar run by ``--class``), not a Python script.

A review submitted a small Java word count: its runs are recorded as a script's are (the task
rows sum to their stages' task counts; a Dataset file scan's input is the file's size, measured);
an exception out of ``main`` after the jobs is recorded failed by the listener, with its text; a
``System.exit(3)``, which the listener hears as a succeeded application, is recorded failed by
submit, with spark-submit's exit code passed through, and said so; one that fails before its
SparkContext records nothing. Found: ``--deploy-mode cluster`` on a
local master (``--deploy-mode``, ``spark.submit.deployMode`` or ``$DEPLOY_MODE``) and a missing jar
whose name does not end in ``.jar`` reached spark-submit, which refused them only after its JVM
started, reading as an application that failed before its session.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from sparkpredict import store as store_mod
from sparkpredict.cli import main
from sparkpredict.errors import StoreError

# WordCount INPUT [sql] [helper] [exit3|throw|early]: counts the words of INPUT (sc.textFile and
# reduceByKey, or with "sql" a Dataset text scan and groupBy), prints "distinct words N".
APP = r"""
package demo;

import java.util.Arrays;
import java.util.List;

import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import scala.Tuple2;

public final class WordCount {
    static String helperTag() {
        try {
            return (String) Class.forName("demo.extra.Helper").getMethod("tag").invoke(null);
        } catch (ReflectiveOperationException e) {
            throw new RuntimeException(e);
        }
    }

    public static void main(String[] args) {
        List<String> flags = Arrays.asList(args).subList(1, args.length);
        if (flags.contains("early")) {
            throw new IllegalArgumentException("bad arguments, before any SparkContext");
        }
        SparkSession spark = SparkSession.builder().appName("jvm-wordcount").getOrCreate();
        JavaSparkContext sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
        long distinct;
        if (flags.contains("sql")) {
            distinct = spark.read().text(args[0]).selectExpr("explode(split(value, ' ')) AS word")
                .groupBy("word").count().collectAsList().size();
        } else {
            distinct = sc.textFile(args[0], 3).flatMap(l -> Arrays.asList(l.split(" ")).iterator())
                .mapToPair(w -> new Tuple2<>(w, 1)).reduceByKey(Integer::sum, 2).collect().size();
        }
        System.out.println("distinct words " + distinct);
        if (flags.contains("helper")) {  // a class of the user's --jars, in the driver and in a task
            String there = sc.parallelize(Arrays.asList(1, 2), 2).map(i -> helperTag()).first();
            System.out.println("driver " + helperTag() + " executor " + there);
        }
        if (flags.contains("exit3")) {
            System.exit(3);
        }
        if (flags.contains("throw")) {
            throw new IllegalStateException("the driver failed after its jobs");
        }
        spark.stop();
    }
}
"""
HELPER = 'package demo.extra;\npublic final class Helper { public static String tag() { return "helper-ok"; } }\n'
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"]


def _jar(classes: Path, jar: Path) -> Path:
    with zipfile.ZipFile(jar, "w") as z:
        z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n\n")
        for f in sorted(classes.rglob("*.class")):
            z.write(f, f.relative_to(classes).as_posix())
    return jar


@pytest.fixture(scope="session")
def jvm_app(tmp_path_factory) -> dict[str, Path]:
    """The compiled app.jar, an extra.jar holding demo.extra.Helper, and its input text."""
    from sparkpredict.capture.listener import _find_javac, pyspark_home

    root = tmp_path_factory.mktemp("jvm-app")
    for name, text in (("src/demo/WordCount.java", APP), ("extra/demo/extra/Helper.java", HELPER)):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    for src, out in (("src/demo/WordCount.java", "classes"), ("extra/demo/extra/Helper.java", "extra-classes")):
        proc = subprocess.run([_find_javac(), "-nowarn", "-d", str(root / out), "-cp",
                               str(pyspark_home() / "jars" / "*"), str(root / src)],
                              capture_output=True, text=True, timeout=300, check=False)
        assert proc.returncode == 0, proc.stderr[-3000:]
    text = root / "input.txt"
    text.write_text("".join(" ".join(WORDS[(i * 3 + j) % len(WORDS)] for j in range(8)) + "\n"
                            for i in range(4000)))
    return {"app": _jar(root / "classes", root / "app.jar"),
            "extra": _jar(root / "extra-classes", root / "extra.jar"), "input": text}


def _submit(store: Path, *args: str) -> tuple[int, str, float]:
    """(exit code, stdout and stderr, seconds) of ``sparkpredict submit --store STORE ARGS``."""
    start = time.time()
    proc = subprocess.run([sys.executable, "-m", "sparkpredict", "submit", "--store", str(store), *args],
                          capture_output=True, text=True, timeout=300, check=False,
                          env=dict(os.environ, PYSPARK_PYTHON=sys.executable))
    return proc.returncode, proc.stdout + proc.stderr, time.time() - start


def _spark_args(jvm_app, *flags: str, options: tuple[str, ...] = ()) -> list[str]:
    return ["--master", "local[2]", "--driver-memory", "512m", "--conf", "spark.ui.enabled=false", *options,
            "--class", "demo.WordCount", str(jvm_app["app"]), str(jvm_app["input"]), *flags]


def _check_rows(st, run) -> None:
    """The run's stage rows hold its task rows: per stage attempt, by its own count and the run's."""
    stages, tasks = st.stages(), st.tasks()
    stages, tasks = stages[stages["run_id"] == run.run_id], tasks[tasks["run_id"] == run.run_id]
    assert len(stages) == run.num_stages >= 2  # a shuffle: a map stage and a result stage
    per_stage = tasks.groupby(["stage_id", "stage_attempt_id"]).size()
    for s in stages.itertuples():
        assert s.status == "succeeded"
        assert per_stage.get((s.stage_id, s.stage_attempt_id), 0) == s.num_tasks == s.num_task_rows > 0
    assert len(tasks) == stages["num_tasks"].sum() == run.num_tasks
    assert stages["shuffle_read_bytes"].sum() == run.shuffle_read_bytes > 0


@pytest.mark.spark
def test_a_jvm_apps_run_is_recorded_with_its_input_measured(jvm_app, tmp_path):
    """A Dataset word count with the user's own --jars beside the listener's: succeeded, on the
    count asked for, its input the size of the file its scan read."""
    store = tmp_path / "store"
    rc, out, wall_s = _submit(store, "--job", "jvm-wc", "--executors", "1", "--",
                              *_spark_args(jvm_app, "sql", "helper", options=("--jars", str(jvm_app["extra"]))))
    assert rc == 0, out[-4000:]
    assert f"distinct words {len(WORDS)}" in out  # the application's output streams through
    assert "driver helper-ok executor helper-ok" in out  # the user's jar reached driver and executor
    runs = store_mod.open(store).runs()
    assert len(runs) == 1
    run = next(runs.itertuples())
    assert f"recorded {run.run_id} in {store}" in out and "is recorded" not in out
    assert (run.job, run.app_name, run.status) == ("jvm-wc", "jvm-wordcount", "succeeded")
    assert pd.isna(run.error_message)
    assert run.master == "local[1]" and run.executors_requested == 1  # --executors 1 on local[2]
    assert 0 < run.wall_ms < wall_s * 1000
    assert run.num_jobs >= 2  # the count and the helper's
    assert (run.input_bytes, run.input_bytes_source) == (jvm_app["input"].stat().st_size, "measured")
    _check_rows(store_mod.open(store), run)
    from sparkpredict.features.runs import runs_table

    table = runs_table(store)
    assert list(table["executors"]) == [1] and list(table["input_bytes"]) == [jvm_app["input"].stat().st_size]


@pytest.mark.spark
@pytest.mark.parametrize("how, code, why", [
    ("exit3", 3, "spark-submit exited with code 3"),
    ("throw", 1, "the driver raised java.lang.IllegalStateException: the driver failed after its jobs")])
def test_a_jvm_app_failing_after_its_jobs_is_recorded_failed(jvm_app, tmp_path, how, code, why):
    """System.exit(3), or an exception out of main, after the jobs: submit passes the exit code
    through, and the run is recorded failed, which submit says (before, only "recorded RUN" was
    printed, the run's status left to be looked up). The exception out of main the listener
    records itself, with its text (before, it heard the application end as succeeded, and only
    submit's correction by the exit code made it failed: without submit, under a cluster's
    listener settings, the run stayed succeeded); System.exit(3) only submit can tell."""
    store = tmp_path / "store"
    rc, out, _ = _submit(store, "--", *_spark_args(jvm_app, how))  # no --job: the app's name
    assert rc == code, out[-4000:]
    assert f"distinct words {len(WORDS)}" in out
    if how == "throw":  # the JVM's own report of it, unchanged by the listener's handler
        assert 'Exception in thread "main" java.lang.IllegalStateException: the driver failed after its jobs' in out
    st = store_mod.open(store)
    runs = st.runs()
    assert len(runs) == 1
    run = next(runs.itertuples())
    assert (run.job, run.status, run.error_message) == ("jvm-wordcount", "failed", why)
    assert f"{run.run_id} is recorded failed ({why}): the advice learns from succeeded runs only" in out
    assert run.end_ms is not None and run.wall_ms == run.end_ms - run.start_ms > 0
    _check_rows(st, run)
    # sc.textFile's input counts its tasks' input metric: Hadoop's reads, past each split's end too
    assert run.input_bytes_source == "measured"
    assert run.input_bytes == st.stages().query("run_id == @run.run_id")["input_bytes"].sum() \
        >= jvm_app["input"].stat().st_size


@pytest.mark.spark
def test_a_jvm_app_failing_before_its_spark_context_records_nothing(jvm_app, tmp_path):
    store = tmp_path / "store"
    rc, out, _ = _submit(store, "--job", "jvm-early", "--", *_spark_args(jvm_app, "early"))
    assert rc == 1, out[-4000:]
    assert "java.lang.IllegalArgumentException: bad arguments, before any SparkContext" in out
    assert f"no run was recorded in {store}: the application exited with status 1" in out
    try:
        runs = store_mod.open(store).runs()
    except StoreError:  # nothing was written, so no store was made
        return
    assert runs.empty


def _no_spark(monkeypatch):
    import sparkpredict.capture.submit as capture_submit

    def no_spark(*a, **k):
        raise AssertionError("spark-submit ran")

    monkeypatch.setattr(capture_submit, "submit", no_spark)


def _refusal(capsys) -> tuple[str, str]:
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-2].startswith("error: ") and err[-1].startswith("fix: "), err
    return err[-2], err[-1]


@pytest.mark.parametrize("given, env, said, fix", [
    (["--master", "local[2]", "--deploy-mode", "cluster"], {},
     "--deploy-mode cluster is not compatible with the master 'local[2]' (--master)", "drop --deploy-mode cluster"),
    (["--conf", "spark.submit.deployMode=cluster"], {},
     "--conf spark.submit.deployMode=cluster is not compatible with the master 'local[*]' (spark-submit's default)",
     "drop --conf spark.submit.deployMode"),
    (["--master", "local-cluster[1,1,1024]"], {"DEPLOY_MODE": "cluster"},
     "$DEPLOY_MODE=cluster is not compatible with the master 'local-cluster[1,1,1024]'", "unset DEPLOY_MODE"),
], ids=["--deploy-mode", "--conf", "$DEPLOY_MODE"])
def test_the_cluster_deploy_mode_on_a_local_master_is_refused_before_spark_starts(
        jvm_app, tmp_path, capsys, monkeypatch, given, env, said, fix):
    """spark-submit refuses it ("Cluster deploy mode is not compatible with master "local"") only
    after its JVM started; submit then said the application failed before its session, and an
    --executors auto had fitted its advice first. --dry-run is refused too."""
    _no_spark(monkeypatch)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    app = ["--class", "demo.WordCount", str(jvm_app["app"]), str(jvm_app["input"])]
    for dry in ([], ["--dry-run"]):
        assert main(["submit", "--store", str(tmp_path / "s"), "--job", "j", *dry, "--", *given, *app]) == 2
        msg, hint = _refusal(capsys)
        assert said in msg and "a local master runs its driver here" in msg, msg
        assert hint.startswith(f"fix: {fix} to run it here"), hint
    assert not (tmp_path / "s").exists()
    # a cluster's master takes it, and --deploy-mode client outranks the setting
    assert main(["submit", "--store", str(tmp_path / "s"), "--dry-run", "--", "--master", "yarn",
                 "--deploy-mode", "cluster", *app]) == 0
    assert main(["submit", "--store", str(tmp_path / "s"), "--dry-run", "--", *given,
                 "--deploy-mode", "client", *app]) == 0
    out = capsys.readouterr().out
    assert "--deploy-mode client --class demo.WordCount" in out


def test_a_missing_jar_is_refused_whatever_its_name_ends_with(jvm_app, tmp_path, capsys, monkeypatch):
    """spark-submit runs any resource but a script as a jar: build/app, not there, was "Local jar
    ... does not exist, skipping" and "Failed to load class" after the JVM's start (exit 101)."""
    _no_spark(monkeypatch)
    for resource in ("build/app", "nope.jar"):
        assert main(["submit", "--store", str(tmp_path / "s"), "--", "--master", "local[1]",
                     "--class", "demo.WordCount", resource, "in.txt"]) == 2
        msg, _ = _refusal(capsys)
        assert msg == f"error: the application {resource!r} is not a file here"
    from sparkpredict.capture.submit_args import check_application

    for resource in ("spark-internal", "pyspark-shell", "connect-shell", "local:/opt/app", "hdfs:///a/app"):
        check_application(["--master", "local[1]", "--class", "demo.WordCount", resource])
    check_application(["--master", "local[1]", "--class", "demo.WordCount", str(jvm_app["app"])])
