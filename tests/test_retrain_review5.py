"""Retraining review 5: what the Spark path leaves behind and refuses, one job's fault, a registry
that cannot be written.

The Spark path left a caller's session with ``spark.sql.shuffle.partitions`` 8 and AQE off where
neither was set; a store at ``br[1]`` failed with PATH_NOT_FOUND (a glob); a job whose runs held
``properties_json = "null"`` aborted the whole retrain on both paths (AttributeError), and any
error other than sparkpredict's and ValueError did the same; executors whose Python lacked
pyarrow printed a Py4J trace; an ``_models`` that is a file was found only after every fit.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sparkpredict import fitting, store
from sparkpredict import registry as R
from sparkpredict import retrain as RT
from sparkpredict import retrain_spark as RS
from sparkpredict.errors import InputError, StoreError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from retrain_scaling import make_history, write_history

HISTORY = Path(__file__).parent / "data" / "history"
SESSION_KEYS = ("spark.sql.shuffle.partitions", "spark.sql.adaptive.enabled")


def _history_copy(dest: Path, null_props_job: str | None = None) -> Path:
    """tests/data/history written again through Store.append, the runs of ``null_props_job``
    with ``properties_json`` "null" (JSON, but no object)."""
    src = store.open(HISTORY)
    tables = {t: src.read(t) for t in ("runs", "stages", "tasks", "executors")}
    if null_props_job is not None:
        runs = tables["runs"]
        tables["runs"] = runs.assign(properties_json=runs["properties_json"].where(runs["job"] != null_props_job, "null"))
    store.open(dest, create=True).append(tables)
    return dest


# ---- 3: one job's fault fails that job only --------------------------------------------------
def test_runs_whose_properties_are_json_null_are_fitted_as_runs_without_properties(tmp_path):
    path = _history_copy(tmp_path / "store", null_props_job="sort")
    res = RT.retrain_local(path)
    assert res.errors == {} and res.exit_code == 0
    assert res.refit == res.stage_refit == ["sort", "sqljoin", "wordcount"]


def test_any_error_of_one_jobs_fit_fails_that_job_and_the_others_commit(tmp_path, monkeypatch):
    path = _history_copy(tmp_path / "store")
    real = fitting.fit_group

    def faulty(raw, **kw):
        if raw["job"].iloc[0] == "sort":
            raise AttributeError("'NoneType' object has no attribute 'get'")
        return real(raw, **kw)

    monkeypatch.setattr(fitting, "fit_group", faulty)
    res = RT.retrain_local(path, stage_models=False)
    assert res.exit_code == 1 and res.refit == ["sqljoin", "wordcount"]
    assert res.errors == {"sort": "AttributeError: 'NoneType' object has no attribute 'get'"}
    assert set(R.read_registry(path)["job"]) == {"sqljoin", "wordcount"}


# ---- 5: a registry that cannot be written is refused before any fit --------------------------
@pytest.mark.parametrize("broken, said", [
    ("_models", "_models is a file, not the folder of the store's model registry"),
    ("_models/registry", "model registry of store"),
])
def test_a_registry_folder_that_is_a_file_is_refused_before_any_fit(tmp_path, monkeypatch, broken, said):
    path = _history_copy(tmp_path / "store")
    (path / broken).parent.mkdir(parents=True, exist_ok=True)
    (path / broken).write_text("x")

    def no_fit(*a, **k):
        raise AssertionError("fitted before the registry was checked")

    monkeypatch.setattr(RT, "fit_group_safe", no_fit)
    monkeypatch.setattr(RS, "_start_session", no_fit)
    for attempt in (lambda: RT.plan_path(path), lambda: RT.retrain_local(path),
                    lambda: RT.retrain_spark(path, master="local[2]")):
        with pytest.raises(StoreError) as err:
            attempt()
        assert said in err.value.message and f"rm {path / broken}" in err.value.fix
    if broken.endswith("registry"):
        assert "is broken" in err.value.message and "refits every job" in err.value.fix


# ---- 6: --models given a history store ----------------------------------------------------------
def test_models_given_a_store_or_its_registry_folder_says_to_give_it_as_store(tmp_path, capsys):
    from sparkpredict.cli import main

    path = _history_copy(tmp_path / "store")
    RT.retrain_local(path, kind="amdahl", stage_models=False)
    for given, registry in ((str(path), False), (str(path) + "/", False), (str(path / "_models"), True)):
        assert main(["suggest", "--job", "sort", "--input-size", "16MB", "--models", given]) == 2
        err = capsys.readouterr().err
        # a trailing slash (a shell's completion) is the store itself, not its registry
        assert ("is the model registry of a history store" in err) == registry, err
        assert "a history store, not a folder of" in err
        assert f"fix: give the store as --store {path}:" in err and "fit them first" not in err
    # the fix works: the store's registry answers
    assert main(["suggest", "--job", "sort", "--input-size", "16MB", "--store", str(path)]) == 0
    assert "from the registry" in capsys.readouterr().out


def test_a_store_given_for_models_is_named_as_the_caller_can_give_it(tmp_path, capsys):
    """The fix named `--store S` wherever the store came in: from Python (README and
    docs/advice.md: an error names the argument the caller wrote, ``store=``), and from
    `sparkpredict predict`, which has no --store (it refused the fix's own advice)."""
    import sparkpredict
    from sparkpredict.cli import main
    from sparkpredict.registry import load_models as registry_models

    path = _history_copy(tmp_path / "store")
    RT.retrain_local(path, kind="amdahl", stage_models=False)
    for given in (str(path), str(path / "_models")):
        with pytest.raises(InputError) as err:
            sparkpredict.suggest_executors("sort", "16MB", models=given)
        assert "a history store, not a folder of" in err.value.message
        assert f"store={str(path)!r}" in err.value.fix and "--store" not in err.value.fix, err.value.fix
        # the fix works
        assert sparkpredict.suggest_executors("sort", "16MB", store=str(path)).model_source.startswith("from the registry")

    query = tmp_path / "q.csv"
    query.write_text("job,input_bytes,executors\nsort,16000000,2\n")
    assert main(["predict", str(path), str(query), "--out", str(tmp_path / "p.csv")]) == 2
    err = capsys.readouterr().err
    assert "a history store, not a folder of `sparkpredict fit` models" in err
    fix = next(line for line in err.splitlines() if line.startswith("fix: "))
    assert "--store" not in fix.split("`")[0], fix  # what predict itself takes: no --store
    assert f"sparkpredict runs --store {path} --out runs.csv" in fix and "sparkpredict fit runs.csv --out DIR" in fix
    assert not (tmp_path / "p.csv").exists()

    # the models layer, called from Python, names the registry's loader
    from sparkpredict.models.persist import load_models

    with pytest.raises(InputError) as err:
        load_models(str(path))
    assert f"sparkpredict.registry.load_models({str(path)!r})" in err.value.fix and "--store" not in err.value.fix
    assert set(registry_models(str(path))) == {"sort", "sqljoin", "wordcount"}


# ---- 7: an hdfs:// store pyarrow cannot reach ---------------------------------------------------
def _job_script():
    import importlib.util

    spec = importlib.util.spec_from_file_location("retrain_job", Path(__file__).resolve().parents[1] / "jobs" / "retrain.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_an_hdfs_store_without_libhdfs_is_not_sent_to_the_spark_path_which_needs_it_too(capsys):
    uri = "hdfs://namenode.invalid:8020/store"
    with pytest.raises(StoreError) as err:
        store.open(uri)
    assert "libhdfs" in err.value.fix and "reads the store through Spark instead" not in err.value.fix
    assert "`retrain --spark` and jobs/retrain.py too" in err.value.fix
    # as the fix says: the Spark job's driver stops on the same error
    assert _job_script().main(["--store", uri]) == 2
    assert "libhdfs" in capsys.readouterr().err


# ---- 8: --master yarn without the cluster's configuration -------------------------------------
def test_master_yarn_without_hadoop_conf_dir_is_refused_before_spark_starts(tmp_path, monkeypatch, capsys):
    from sparkpredict.cli import main

    for var in ("HADOOP_CONF_DIR", "YARN_CONF_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "conf"))  # no spark-env.sh setting them
    monkeypatch.setattr(RS, "_start_session", lambda *a, **k: pytest.fail("Spark was started"))
    path = _history_copy(tmp_path / "store")
    assert main(["retrain", "--store", str(path), "--master", "yarn"]) == 2
    err = capsys.readouterr().err
    assert "neither HADOOP_CONF_DIR nor YARN_CONF_DIR is set" in err and "fix: export HADOOP_CONF_DIR" in err
    assert R.current_snapshot(path) is None
    # a spark-env.sh that sets it (spark-submit sources it) is enough
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "spark-env.sh").write_text("export HADOOP_CONF_DIR=/etc/hadoop/conf\n")
    RT.check_master("yarn")



def test_master_yarn_reads_the_spark_env_sh_spark_submit_sources_not_the_working_folders(tmp_path, monkeypatch):
    from sparkpredict.capture import submit_args

    for var in ("HADOOP_CONF_DIR", "YARN_CONF_DIR", "SPARK_CONF_DIR", "SPARK_HOME"):
        monkeypatch.delenv(var, raising=False)
    sets_it = "export HADOOP_CONF_DIR=/etc/hadoop/conf\n"

    def spark_home(path: Path, env_sh: str | None) -> Path:
        (path / "bin").mkdir(parents=True)
        (path / "bin" / "spark-submit").write_text("")
        (path / "conf").mkdir()
        if env_sh is not None:
            (path / "conf" / "spark-env.sh").write_text(env_sh)
        return path

    # a pip pyspark's spark-submit runs from the package's folder: a conf/ of the working
    # folder is not read, the package's is
    pip = spark_home(tmp_path / "site-packages" / "pyspark", None)
    monkeypatch.setattr(submit_args, "pyspark_home", lambda: pip)
    (tmp_path / "cwd" / "conf").mkdir(parents=True)
    (tmp_path / "cwd" / "conf" / "spark-env.sh").write_text(sets_it)
    monkeypatch.chdir(tmp_path / "cwd")
    with pytest.raises(InputError, match="neither HADOOP_CONF_DIR nor YARN_CONF_DIR is set"):
        RT.check_master("yarn")
    (pip / "conf" / "spark-env.sh").write_text(sets_it)
    RT.check_master("yarn")
    # $SPARK_HOME's conf/ is read instead of the package's
    monkeypatch.setenv("SPARK_HOME", str(spark_home(tmp_path / "spark-4.1", "")))
    with pytest.raises(InputError, match="neither HADOOP_CONF_DIR"):
        RT.check_master("yarn")
    # and $SPARK_CONF_DIR instead of both
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "cluster-conf"))
    (tmp_path / "cluster-conf").mkdir()
    (tmp_path / "cluster-conf" / "spark-env.sh").write_text("export YARN_CONF_DIR=/etc/hadoop/conf\n")
    RT.check_master("yarn")


def test_master_yarn_counts_only_a_spark_env_sh_line_that_sets_the_variable(tmp_path, monkeypatch):
    # Spark's spark-env.sh.template names both in comments: its text alone let yarn through to
    # the JVM's 20-line trace
    for var in ("HADOOP_CONF_DIR", "YARN_CONF_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    env_sh = tmp_path / "spark-env.sh"
    not_set = [
        ("# Options read in any cluster manager using HDFS\n"
         "# - HADOOP_CONF_DIR, to point Spark towards Hadoop configuration files\n"
         "# - YARN_CONF_DIR, to point Spark towards YARN configuration files when you use YARN\n"),
        "# export HADOOP_CONF_DIR=/etc/hadoop/conf\n",
        "  #YARN_CONF_DIR=/etc/hadoop/conf\n",
        "export SPARK_LOCAL_IP=127.0.0.1  # HADOOP_CONF_DIR=/etc/hadoop/conf is for the cluster\n",
        "export HADOOP_CONF_DIR=\n",
        'HADOOP_CONF_DIR=""\nexport YARN_CONF_DIR=\'\'\n',
        "echo $HADOOP_CONF_DIR\nMY_HADOOP_CONF_DIR=/etc/hadoop/conf\n",
    ]
    for text in not_set:
        env_sh.write_text(text)
        with pytest.raises(InputError, match="neither HADOOP_CONF_DIR nor YARN_CONF_DIR is set"):
            RT.check_master("yarn")
    sets_it = [
        "export HADOOP_CONF_DIR=/etc/hadoop/conf\n",
        "# export HADOOP_CONF_DIR=/opt/old\nYARN_CONF_DIR=/etc/hadoop/conf\n",  # set -a exports it
        '  export   HADOOP_CONF_DIR="/etc/hadoop/conf"   # the cluster\n',
        "[ -d /etc/hadoop/conf ] && export HADOOP_CONF_DIR=/etc/hadoop/conf\n",
        "if true; then\n    HADOOP_CONF_DIR=${HADOOP_CONF_DIR:-/etc/hadoop/conf}\nfi\n",
    ]
    for text in sets_it:
        env_sh.write_text(text)
        assert RT._hadoop_conf_known(), text
        RT.check_master("yarn")


# ---- 9: jobs/retrain.py's errors as JSON -------------------------------------------------------
def test_the_spark_job_gives_an_error_as_the_cli_json_does_on_stdout_and_in_its_file(tmp_path, capsys):
    from sparkpredict.cli import main

    missing, out = tmp_path / "nonexistent", tmp_path / "result.json"
    assert main(["retrain", "--store", str(missing), "--json"]) == 2
    cli = json.loads(capsys.readouterr().out)
    assert _job_script().main(["--store", str(missing), "--json-out", str(out)]) == 2
    stdout, err = capsys.readouterr()
    job = json.loads(stdout.strip().splitlines()[-1])
    assert job == cli == json.loads(out.read_text()) and set(job) == {"error", "fix"}
    assert f"error: {job['error']}" in err  # a person reads it on stderr as before
    # a job without runs, found after the store was opened
    path = _history_copy(tmp_path / "store")
    assert _job_script().main(["--store", str(path), "--job", "nosuch", "--json-out", str(out)]) == 2
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["error"].startswith("no runs of job 'nosuch'")
    assert json.loads(out.read_text())["error"].startswith("no runs of job 'nosuch'")


# ---- 10: --dry-run counts the stage models the retrain fits -------------------------------------
def test_the_dry_run_counts_only_stage_models_the_retrain_fits(tmp_path, capsys):
    from sparkpredict.cli import main

    path = _history_copy(tmp_path / "store")
    st = store.open(path)
    run = st.runs().query("job == 'sort'").head(1)
    stages = st.read("stages").query("run_id == @run.run_id.iloc[0]")
    st.append({"runs": run.assign(run_id="app-failjob", app_id="app-failjob", job="failjob", status="failed"),
               "stages": stages.assign(run_id="app-failjob")})
    plan = RT.plan_path(path)
    assert plan["to_refit"] == ["failjob", "sort", "sqljoin", "wordcount"]
    assert plan["stage_jobs"] == ["sort", "sqljoin", "wordcount"]  # failjob's only run failed
    assert main(["retrain", "--store", str(path), "--dry-run"]) == 0
    assert "4 of 4 job(s) would be refit on the local path, 3 of them with stage models" in capsys.readouterr().out
    res = RT.retrain_local(path)
    assert res.stage_refit == plan["stage_jobs"] and res.stage_skipped == ["failjob"]


# ---- 11: wording -------------------------------------------------------------------------------
def test_a_given_kind_is_not_told_what_choosing_one_automatically_needs(tmp_path):
    path = tmp_path / "store"
    write_history(path, make_history(1, runs_per_job=2, seed=1), batches=1)
    auto, gbm = RT.retrain_local(path, stage_models=False), RT.retrain_local(path, kind="gbm", stage_models=False)
    assert "choosing one automatically at least 6" in auto.skipped["job-00000"]
    assert gbm.skipped["job-00000"].startswith("only 2 usable runs (of 2); a runtime model needs at least 4 (fix: ")


def test_the_dry_run_counts_a_crossover_of_one_job_in_the_singular(tmp_path, monkeypatch, capsys):
    from sparkpredict.cli import main

    monkeypatch.setenv(RT.CROSSOVER_ENV, "1")
    monkeypatch.setattr(RT, "spark_available", lambda: False)
    path = _history_copy(tmp_path / "store")
    assert main(["retrain", "--store", str(path), "--dry-run", "--no-stage-models"]) == 0
    assert "(the Spark path is taken from 1 job to refit, or 1 with stage models" in capsys.readouterr().out


# ---- the Spark path -------------------------------------------------------------------------
@pytest.mark.spark
def test_spark_reads_a_store_at_a_path_with_glob_characters_and_restores_the_session(spark_app, tmp_path):
    # "s[1]" as a glob is "s1": a store there must not be read instead
    write_history(tmp_path / "s[1]", make_history(2, runs_per_job=8, seed=1, prefix="mine"), batches=2)
    write_history(tmp_path / "s1", make_history(3, runs_per_job=8, seed=2, prefix="other"), batches=1)
    with spark_app(tmp_path / "listener-store", job="retrain-test") as spark:
        for k in SESSION_KEYS:  # a session that set neither (the fixture sets both)
            spark.conf.unset(k)
        before = {k: spark.conf.get(k, None) for k in SESSION_KEYS}
        res = RT.retrain_spark(tmp_path / "s[1]", spark=spark, kind="amdahl", stage_models=False)
        after = {k: spark.conf.get(k, None) for k in SESSION_KEYS}
    assert res.refit == ["mine-00000", "mine-00001"] and res.exit_code == 0
    assert before == after == {k: None for k in SESSION_KEYS}


@pytest.mark.spark
def test_spark_fits_a_job_whose_properties_are_json_null_with_the_others(spark_app, tmp_path):
    path = _history_copy(tmp_path / "store", null_props_job="sort")
    with spark_app(tmp_path / "listener-store", job="retrain-test") as spark:
        res = RT.retrain_spark(path, spark=spark)
    assert res.errors == {} and res.refit == res.stage_refit == ["sort", "sqljoin", "wordcount"]


def _python_without_pyarrow() -> str | None:
    exe = "/usr/bin/python3"
    if not os.path.exists(exe):
        return None
    found = subprocess.run([exe, "-c", "import pyarrow"], check=False, capture_output=True).returncode == 0
    return None if found else exe


@pytest.mark.spark
def test_executors_whose_python_lacks_sparkpredict_are_one_error_and_leave_the_registry(spark_app, tmp_path,
                                                                                        monkeypatch):
    exe = _python_without_pyarrow()
    if exe is None:
        pytest.skip("no Python without pyarrow on this machine")
    path = tmp_path / "store"
    write_history(path, make_history(2, runs_per_job=8, seed=1), batches=1)
    monkeypatch.setenv("PYSPARK_PYTHON", exe)  # a SparkContext takes its workers' Python from it
    with spark_app(tmp_path / "listener-store", job="retrain-test") as spark, pytest.raises(InputError) as err:
        RT.retrain_spark(path, spark=spark, kind="amdahl", stage_models=False)
    assert err.value.message == ("the executors' Python could not run sparkpredict's fit: "
                                 "ModuleNotFoundError: No module named 'pyarrow'")
    assert "spark.pyspark.python" in err.value.fix and "--local" in err.value.fix
    assert R.current_snapshot(path) is None and not (path / "_models" / "artifacts").exists()


# ---- the executors' Python: what is its fault and what is not ---------------------------------
# Texts as Spark 4.3 gave them (the version mismatch as PySpark's worker raises it: no second
# Python version here to start a worker on).
_WORKER = "An exception was thrown from the Python worker:\nTraceback (most recent call last):\n"
_IN_UDF = '  File "/opt/sparkpredict/retrain_spark.py", line 371, in fit_partition\n    yield per_job(carry)\n'
_JAVA_TASK = ("An error occurred while calling o210.collectToPython.\n: org.apache.spark.SparkException: Job "
              "aborted due to stage failure: Task 0 in stage 0.0 failed 1 times, most recent failure: Lost task "
              "0.0 in stage 0.0 (TID 0) (192.0.2.2 executor driver): ")
_JAVA_FRAMES = ("\n\tat org.apache.spark.api.python.BasePythonRunner.compute(PythonRunner.scala:637)\n"
                "\tat org.apache.spark.rdd.RDD.iterator(RDD.scala:338)\n")


def _raised_on_worker(text: str, name: str = "PythonException") -> Exception:
    """An exception of pyspark's (or py4j's) class name, as the driver meets it, without a JVM."""
    return type(name, (Exception,), {})(text)


class _Fitted:
    def __init__(self, exc: Exception):
        self.exc = exc

    def collect(self):
        raise self.exc


@pytest.mark.parametrize("exc, said", [
    (_raised_on_worker(_WORKER + '  File "/usr/lib/pyspark.zip/pyspark/worker.py", line 2696, in read_udfs\n'
                       "    import pyarrow as pa\nModuleNotFoundError: No module named 'pyarrow'"),
     "ModuleNotFoundError: No module named 'pyarrow'"),
    (_raised_on_worker(_WORKER + '  File "/usr/lib/pyspark.zip/pyspark/worker_util.py", line 93, in '
                       "check_python_version\n    raise PySparkRuntimeError(\n"
                       "pyspark.errors.exceptions.base.PySparkRuntimeError: [PYTHON_VERSION_MISMATCH] Python in "
                       "worker has different version: 3.10 than that in driver: 3.11, PySpark cannot run with "
                       "different minor versions.\nPlease check environment variables PYSPARK_PYTHON and "
                       "PYSPARK_DRIVER_PYTHON are correctly set."),
     ("pyspark.errors.exceptions.base.PySparkRuntimeError: [PYTHON_VERSION_MISMATCH] Python in worker has "
      "different version: 3.10 than that in driver: 3.11, PySpark cannot run with different minor versions.")),
    (_raised_on_worker(_WORKER + _IN_UDF + "ImportError: cannot import name 'fit_group_safe' from "
                       "'sparkpredict.fitting'"),
     "ImportError: cannot import name 'fit_group_safe' from 'sparkpredict.fitting'"),
    # Spark 3's RDD path: the worker's traceback inside the Java exception, Java frames after it
    (_raised_on_worker(_JAVA_TASK + "org.apache.spark.api.python.PythonException: Traceback (most recent call "
                       "last):\n" + _IN_UDF + "ModuleNotFoundError: No module named 'sparkpredict'\n" + _JAVA_FRAMES,
                       "Py4JJavaError"),
     "ModuleNotFoundError: No module named 'sparkpredict'"),
    (_raised_on_worker(_JAVA_TASK + 'java.io.IOException: Cannot run program "/opt/python3.11/bin/python3": '
                       "error=2, No such file or directory" + _JAVA_FRAMES, "Py4JJavaError"),
     'Cannot run program "/opt/python3.11/bin/python3": error=2, No such file or directory'),
    (_raised_on_worker(_JAVA_TASK + "org.apache.spark.SparkException: Python worker exited unexpectedly "
                       "(crashed). Consider setting 'spark.python.worker.faulthandler.enabled'" + _JAVA_FRAMES,
                       "Py4JJavaError"),
     "its Python worker exited unexpectedly (crashed)"),
], ids=["no-pyarrow", "version-mismatch", "import-error", "spark3-rdd-trace", "no-such-python", "crashed"])
def test_executors_whose_python_cannot_start_or_import_are_one_error_naming_what_it_raised(exc, said):
    assert RS._worker_failure(exc) == said
    with pytest.raises(InputError) as err:
        RS._collected(_Fitted(exc))
    assert err.value.message == f"the executors' Python could not run sparkpredict's fit: {said}"
    assert "spark.pyspark.python" in err.value.fix


@pytest.mark.parametrize("exc, last", [
    # a fit's MemoryError, which fit_group_safe lets through (the machine's fault, not the job's)
    (_raised_on_worker(_WORKER + _IN_UDF + "MemoryError"), "MemoryError"),
    # a bug of ours outside fit_group_safe
    (_raised_on_worker(_WORKER + _IN_UDF + "KeyError: 'trained_on'"), "KeyError: 'trained_on'"),
    # a Java failure of the job that names no Python at all
    (_raised_on_worker(_JAVA_TASK + "java.lang.OutOfMemoryError: Java heap space" + _JAVA_FRAMES, "Py4JJavaError"),
     "java.lang.OutOfMemoryError: Java heap space"),
], ids=["memory-error", "our-bug", "java"])
def test_another_failure_on_the_executors_is_raised_as_it_came_not_blamed_on_their_python(exc, last):
    assert RS._worker_failure(exc) is None
    with pytest.raises(type(exc)) as err:
        RS._collected(_Fitted(exc))
    assert err.value is exc and last in str(err.value) and "spark.pyspark.python" not in str(err.value)
