"""What a review of `sparkpredict submit` with real Spark found: a script's late failure marked
its earlier, finished sessions failed; a spark-submit killed by a signal exited 247; a count
dropped while stderr said it applied; messages naming the wrong flag."""
from __future__ import annotations

import os
import sys
import textwrap

import pytest

from sparkpredict import store as store_mod
from sparkpredict.cli import main


def _err(capsys) -> tuple[str, str]:
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-2].startswith(("error: ", "sparkpredict submit: error: ")) and err[-1].startswith("fix: "), err
    return err[-2], err[-1]


def test_a_late_failure_marks_only_the_scripts_last_application(spark_app, tmp_path):
    """Two sessions of one script, then an exit code 4: the first had finished long before."""
    from sparkpredict.capture.submit import KEY_SUBMIT_ID, _record_outcome

    store = tmp_path / "store"
    for job in ("first", "second"):
        with spark_app(store, job=job, conf={KEY_SUBMIT_ID: "tag-two"}) as spark:
            assert spark.sparkContext.parallelize(range(5)).count() == 5
    assert _record_outcome(str(store), "tag-two", 4)
    runs = store_mod.open(store).runs().set_index("job")
    assert runs.loc["first", "status"] == "succeeded"  # was failed: out of training
    assert runs.loc["second", "status"] == "failed"
    assert runs.loc["second", "error_message"] == "spark-submit exited with code 4"
    # killed by a signal (Popen's -9): the last application is killed, and says by what
    assert _record_outcome(str(store), "tag-two", -9)
    runs = store_mod.open(store).runs().set_index("job")
    assert runs.loc["first", "status"] == "succeeded" and runs.loc["second", "status"] == "failed"


def test_a_signal_kill_of_the_last_open_run_says_killed(spark_app, tmp_path):
    from sparkpredict.capture.submit import KEY_SUBMIT_ID, _record_outcome

    store = tmp_path / "store"
    with spark_app(store, job="cut", conf={KEY_SUBMIT_ID: "tag-kill"}) as spark:
        assert spark.sparkContext.parallelize(range(5)).count() == 5
    assert _record_outcome(str(store), "tag-kill", -9)
    run = store_mod.open(store).runs().iloc[0]
    assert run.status == "killed" and run.error_message == "spark-submit was killed by SIGKILL"


@pytest.mark.spark
def test_a_spark_submit_killed_by_a_signal_exits_as_a_shell_says_it(listener_jar, tmp_path, monkeypatch, capfd):
    """Popen's -9 went out as sys.exit(-9), which a shell reads as 247."""
    script = tmp_path / "die.py"
    # the driver's parent is spark-submit's JVM: SIGKILL it, as an OOM killer would
    script.write_text(textwrap.dedent("""
        import os, signal, time
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(30)
    """))
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    rc = main(["submit", "--store", str(tmp_path / "s"), "--", "--master", "local[1]",
               "--conf", "spark.ui.enabled=false", str(script)])
    assert rc == 137
    err = capfd.readouterr().err
    assert "no run was recorded" in err and "spark-submit was killed by signal 9 (exit status 137)" in err, err


def test_an_application_that_fails_before_its_session_is_said_to_have_failed(listener_jar, tmp_path, monkeypatch,
                                                                              capfd):
    """A job script's usage error: the listener's causes (no SparkSession started, a replaced
    spark.extraListeners) were printed under it, though the script only exited 2."""
    script = tmp_path / "usage.py"
    script.write_text("import sys\nprint('error: size -5MB must be positive', file=sys.stderr)\nsys.exit(2)\n")
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    rc = main(["submit", "--store", str(tmp_path / "s"), "--", "--master", "local[1]",
               "--conf", "spark.ui.enabled=false", str(script)])
    err = capfd.readouterr().err
    assert rc == 2
    assert "no run was recorded" in err and "the application exited with status 2, its error above" in err, err
    assert "most likely before it started a SparkSession" in err


def test_an_empty_executor_instances_conf_does_not_drop_the_count(tmp_path, capsys, listener_jar):
    assert main(["submit", "--store", str(tmp_path / "s"), "--executors", "3", "--dry-run", "--",
                 "--master", "local[1]", "--conf", "spark.executor.instances=", "wc.py"]) == 0
    cmd = capsys.readouterr().out
    assert "--master 'local[3]'" in cmd and "spark.executor.instances=3" in cmd


def test_submit_names_the_flag_that_is_wrong(tmp_path, capsys):
    # on a local master the executors' memory is the driver's
    assert main(["submit", "--store", str(tmp_path / "s"), "--executors", "auto", "--job", "x",
                 "--input-size", "1MB", "--dry-run", "--", "--master", "local[1]", "--executor-memory", "4g",
                 "--driver-memory", "100m", "job.py"]) == 2
    msg, fix = _err(capsys)
    assert "--driver-memory 100 MiB is too small" in msg and "--driver-memory 450m" in fix
    # "--conf" before -- was read as --confidence
    with pytest.raises(SystemExit) as e:
        main(["submit", "--conf", "spark.x=1", "--", "job.py"])
    assert e.value.code == 2 and "unrecognized arguments: --conf" in capsys.readouterr().err


def test_a_missing_script_is_refused_before_spark_starts(tmp_path, capsys, monkeypatch):
    import sparkpredict.capture.submit as capture_submit

    def no_spark(*a, **k):
        raise AssertionError("spark-submit ran")

    monkeypatch.setattr(capture_submit, "submit", no_spark)
    assert main(["submit", "--store", str(tmp_path / "s"), "--", "--master", "local[1]", "missing.py"]) == 2
    msg, _ = _err(capsys)
    assert "the application 'missing.py' is not a file here" in msg
    assert not os.path.exists(tmp_path / "s")
    # said alone: not below --executors auto's advice and warnings, nor below the local master
    # the count would have given the run ("master local[1] ... runs as local[2]")
    from test_advise_history import history, make_store

    store = make_store(tmp_path / "hist", history())
    for how in (["--executors", "auto", "--job", "etl", "--input-size", "30GB", "--deadline", "10m"],
                ["--executors", "2"]):
        assert main(["submit", "--store", store, *how, "--", "--master", "local[1]", "missing.py"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 2 and err[0] == "error: the application 'missing.py' is not a file here", err
    # a URI, and a cluster-mode driver's path, are read elsewhere: not refused here
    from sparkpredict.capture.submit_args import check_application

    check_application(["--master", "yarn", "--deploy-mode", "cluster", "missing.py"])
    check_application(["--master", "local[1]", "hdfs:///apps/job.py"])


def test_the_script_is_looked_for_once_whatever_executors_is(tmp_path, monkeypatch):
    """--executors auto looked for the script before its advice and again after it."""
    import sparkpredict.capture.submit as capture_submit
    from sparkpredict.capture import submit_args

    class Submitted(Exception):
        pass

    def no_spark(*a, **k):
        raise Submitted

    looked = []
    check = submit_args.check_application
    monkeypatch.setattr(submit_args, "check_application", lambda args: looked.append(1) or check(args))
    monkeypatch.setattr(capture_submit, "submit", no_spark)
    from test_advise_history import history, make_store

    store = make_store(tmp_path / "hist", history())
    script = tmp_path / "job.py"
    script.write_text("print(1)\n")
    for how in (["--executors", "auto", "--job", "etl", "--input-size", "30GB", "--deadline", "10m"],
                ["--executors", "2"], []):
        looked.clear()
        with pytest.raises(Submitted):
            main(["submit", "--store", store, *how, "--", "--master", "local[1]", str(script)])
        assert len(looked) == 1, (how, looked)
