"""What a mutation audit of ``sparkpredict submit`` found unpinned: the exit status passed
through and what it is said to mean, the command line submit gives spark-submit (the user's
own settings kept, lists merged, the application's arguments untouched), and how the user's
spark-submit arguments and properties files are read.

spark-submit here is a stand-in script under a fake ``$SPARK_HOME`` that writes down its
arguments and exits as told: no JVM starts, so what submit did with them is read exactly."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from sparkpredict.cli import main

LISTENER = "io.sparkpredict.SparkPredictListener"


@pytest.fixture
def fake_spark(tmp_path, monkeypatch, listener_jar):
    """``fake_spark(body)``: a spark-submit that records its arguments (one per line) in
    ``tmp_path/argv`` then runs the shell ``body``; returns the path of the record."""
    home = tmp_path / "spark-home"
    (home / "bin").mkdir(parents=True)
    record = tmp_path / "argv"

    def make(body: str = "exit 0") -> Path:
        script = home / "bin" / "spark-submit"
        script.write_text(f'#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done > "{record}"\n{body}\n')
        script.chmod(0o755)
        return record

    monkeypatch.setenv("SPARK_HOME", str(home))
    monkeypatch.delenv("MASTER", raising=False)
    monkeypatch.delenv("DEPLOY_MODE", raising=False)
    return make


@pytest.fixture
def job(tmp_path) -> str:
    path = tmp_path / "job.py"
    path.write_text("print('never run')\n")
    return str(path)


def _argv(record: Path) -> list[str]:
    return record.read_text().splitlines()


def _confs(argv: list[str], key: str) -> list[str]:
    """The values of every ``--conf key=...`` in ``argv`` (either spelling)."""
    out = []
    for i, a in enumerate(argv):
        v = argv[i + 1] if a in ("--conf", "-c") and i + 1 < len(argv) else (
            a[len("--conf="):] if a.startswith("--conf=") else None)
        if v is not None and v.startswith(key + "="):
            out.append(v[len(key) + 1:])
    return out


# --- exit status --------------------------------------------------------------------------------

@pytest.mark.parametrize("status", [3, 255])
def test_the_applications_exit_status_is_passed_through_and_not_read_as_a_signal(
        fake_spark, job, tmp_path, capfd, status):
    """An application's own status above 128 (sys.exit(-1) is 255; System.exit(137)) was said to
    be "spark-submit was killed by signal 127": only a signal that killed it is one."""
    fake_spark(f"exit {status}")
    rc = main(["submit", "--store", str(tmp_path / "s"), "--", job])
    err = capfd.readouterr().err
    assert rc == status
    assert "killed by signal" not in err, err
    assert f"the application exited with status {status}" in err, err


def test_a_spark_submit_killed_by_a_signal_says_which_and_exits_128_plus_it(fake_spark, job, tmp_path, capfd):
    fake_spark("kill -KILL $$")
    rc = main(["submit", "--store", str(tmp_path / "s"), "--", job])
    err = capfd.readouterr().err
    assert rc == 137
    assert "spark-submit was killed by signal 9 (exit status 137)" in err, err


def test_the_python_api_tells_a_signal_from_an_exit_status(fake_spark, job, tmp_path):
    from sparkpredict.capture.submit import submit

    fake_spark("exit 137")
    own = submit([job], store=str(tmp_path / "s"))
    assert (own.returncode, own.killed_by) == (137, None)
    fake_spark("kill -TERM $$")
    killed = submit([job], store=str(tmp_path / "s"))
    assert (killed.returncode, killed.killed_by) == (143, 15)


# --- the command line: the user's settings kept, lists merged, the application untouched ---------

@pytest.mark.parametrize("given", [["--conf", "spark.extraListeners=com.x.L"], ["--conf=spark.extraListeners=com.x.L"],
                                   ["-c", "spark.extraListeners=com.x.L"]])
def test_the_users_listeners_are_kept_with_ours_added_once(fake_spark, job, tmp_path, given):
    record = fake_spark()
    app_args = ["a b", "--conf", "spark.extraListeners=app.Arg", "--num-executors", "9", ""]
    assert main(["submit", "--store", str(tmp_path / "s"), "--", *given, "--master", "yarn", job, *app_args]) == 0
    argv = _argv(record)
    cut = argv.index(job)
    assert argv[cut + 1:] == app_args  # the application's arguments go to it as they were
    assert _confs(argv[:cut], "spark.extraListeners") == [f"com.x.L,{LISTENER}"]
    assert "--num-executors" not in argv[:cut]


def test_a_properties_files_listeners_are_merged_into_an_added_conf(fake_spark, job, tmp_path):
    record = fake_spark()
    props = tmp_path / "my.conf"
    props.write_text("spark.extraListeners  com.file.L\nspark.sparkpredict.tasks false\n")
    assert main(["submit", "--store", str(tmp_path / "s"), "--", "--properties-file", str(props), job]) == 0
    argv = _argv(record)
    assert _confs(argv, "spark.extraListeners") == [f"com.file.L,{LISTENER}"]
    # a default of submit's: the file's value wins, so none is added over it
    assert _confs(argv, "spark.sparkpredict.tasks") == []


def test_the_users_own_conf_wins_over_submits_default_and_is_not_repeated(fake_spark, job, tmp_path):
    record = fake_spark()
    assert main(["submit", "--store", str(tmp_path / "s"), "--", "--conf", "spark.sparkpredict.tasks=false",
                 "--conf", "spark.plugins=com.x.P", job]) == 0
    argv = _argv(record)
    assert _confs(argv, "spark.sparkpredict.tasks") == ["false"]
    assert _confs(argv, "spark.plugins") == ["com.x.P,io.sparkpredict.HostMetricsPlugin"]


def test_executors_n_sets_the_count_once_and_a_users_count_is_refused_before_spark_submit(
        fake_spark, job, tmp_path, capfd):
    record = fake_spark()
    assert main(["submit", "--store", str(tmp_path / "s"), "--executors", "3", "--", "--master", "yarn", job]) == 0
    argv = _argv(record)
    assert _confs(argv, "spark.executor.instances") == ["3"] and "--num-executors" not in argv
    record.unlink()
    for theirs in (["--num-executors", "4"], ["--num-executors=3"], ["--conf", "spark.executor.instances=4"]):
        assert main(["submit", "--store", str(tmp_path / "s"), "--executors", "3", "--", "--master", "yarn",
                     *theirs, job]) == 2
        err = capfd.readouterr().err
        assert "both set the executor count" in err and "fix: give the executor count once" in err, err
        assert not record.exists()  # spark-submit never ran


# --- properties files as java.util.Properties and Spark read them ------------------------------

def test_properties_keys_split_as_java_splits_them(tmp_path):
    """The key ends at the first unescaped ``=``, ``:`` or blank: an escaped one is the key's
    (``a\\==c`` is key ``a=``), and a line that starts with ``=`` has the empty key."""
    from sparkpredict.capture.properties import read_properties

    path = tmp_path / "p.conf"
    path.write_text("a\\==c\n=orphan\n\\:odd\\=key = v\nx\\ y:z\n")
    assert read_properties(str(path)) == {"a=": "c", "": "orphan", ":odd=key": "v", "x y": "z"}


def test_property_values_are_trimmed_as_spark_trims_them_except_cr_and_lf(tmp_path):
    """Spark's Utils.trimExceptCRLF: a trailing tab (an escaped one too) goes, an escaped
    newline or carriage return at either end stays."""
    from sparkpredict.capture.properties import property_line, read_properties

    path = tmp_path / "p.conf"
    path.write_text("tab = v\\t\nnl = v\\n\ncr = \\rv\nboth = \\t v \\t\\n\nbang = !v!\n")
    assert read_properties(str(path)) == {"tab": "v", "nl": "v\n", "cr": "\rv", "both": "v \t\n", "bang": "!v!"}
    # and what submit writes reads back as it was
    path.write_text("\n".join(property_line(k, v) for k, v in {"b": "x\\", "c": "\\\\"}.items()) + "\n")
    assert read_properties(str(path)) == {"b": "x\\", "c": "\\\\"}


# --- memory sizes -------------------------------------------------------------------------------

@pytest.mark.parametrize(("args", "shape"), [
    (["--executor-memory", "2g"], (None, 2048)), (["--executor-memory", "2048m"], (None, 2048)),
    (["--executor-memory", "2048"], (None, 2048)), (["--executor-memory=2G"], (None, 2048)),
    (["--conf", "spark.executor.memory=3g", "--executor-cores", "4"], (4, 3072)),
    (["--executor-memory", "1t"], (None, 1024 * 1024)), (["--executor-memory", "512k"], (None, None)),
    (["--executor-cores", "0"], (None, None)), (["--executor-cores", "two"], (None, None)),
    (["--executor-cores", "1", "--executor-memory", "1m"], (1, 1)),
])
def test_the_executor_shape_is_read_in_spark_units(args, shape):
    from sparkpredict.capture.submit_args import executor_shape

    assert executor_shape(["--master", "yarn", *args, "job.py"]) == shape
    # a local master's executors are the driver's threads: its memory is the driver's
    assert executor_shape(["--master", "local[2]", "--driver-memory", "1g", *args, "job.py"])[1] == 1024


@pytest.mark.parametrize(("args", "named", "example"), [
    (["--executor-memory", "1.5g"], "--executor-memory 1.5g", "--executor-memory 1536m"),
    (["--driver-memory=2.5G"], "--driver-memory 2.5G", "--driver-memory 2560m"),
    (["--conf", "spark.executor.memory=0.5g"], "spark.executor.memory=0.5g", "spark.executor.memory=512m"),
])
def test_a_memory_with_a_fraction_is_refused_before_the_advice_and_spark_submit(
        fake_spark, job, tmp_path, capfd, args, named, example):
    """spark-submit refuses ``--executor-memory 1.5g`` ("Executor memory must be a positive
    number") only after its JVM started; ``--executors auto`` had fitted and printed an advice
    for 1536 MiB executors first."""
    record = fake_spark()
    rc = main(["submit", "--store", str(tmp_path / "s"), "--job", "etl", "--input-size", "1g", "--executors",
               "auto", "--", "--master", "yarn", *args, job])
    err = capfd.readouterr().err
    assert rc == 2, err
    assert f"error: {named} has a fraction" in err and f"e.g. {example}" in err, err
    assert "advice" not in err and not record.exists()


# --- reading the user's spark-submit arguments -------------------------------------------------

def test_every_conf_spelling_is_read_and_no_other_options_value(tmp_path):
    from sparkpredict.capture.submit_args import given_settings

    args = ["--verbose", "--conf", "spark.a=1", "--name=x=y", "-c", "spark.b=2", "--master", "yarn",
            "--conf=spark.c=3=4", "--conf", "novalue", "--num-executors", "5", "job.py", "--conf", "app.d=5"]
    assert given_settings(args) == {
        "spark.a": ("1", "--conf spark.a=1"), "spark.b": ("2", "--conf spark.b=2"),
        "spark.c": ("3=4", "--conf spark.c=3=4"),
        "spark.executor.instances": ("5", "--num-executors 5")}


def test_the_master_and_deploy_mode_come_from_the_files_then_the_environment(tmp_path, monkeypatch):
    from sparkpredict.capture.submit_args import deploy_mode, effective_master

    monkeypatch.delenv("MASTER", raising=False)
    monkeypatch.delenv("DEPLOY_MODE", raising=False)
    props = tmp_path / "my.conf"
    props.write_text("spark.master  spark://h:7077 \nspark.submit.deployMode cluster\n")
    args = ["--properties-file", str(props), "job.py"]
    assert effective_master(args) == ("spark://h:7077", "my.conf")
    assert deploy_mode(args) == ("cluster", "my.conf")
    monkeypatch.setenv("MASTER", " yarn ")
    monkeypatch.setenv("DEPLOY_MODE", "cluster")
    assert effective_master(["job.py"]) == ("yarn", "$MASTER")
    assert deploy_mode(["job.py"]) == ("cluster", "$DEPLOY_MODE")
    assert effective_master(["--conf", "spark.master=local[2]", "job.py"]) == ("local[2]", "--conf spark.master")
    monkeypatch.delenv("MASTER")
    assert effective_master(["job.py"]) == ("local[*]", "spark-submit's default")


def test_dynamic_allocation_widens_only_a_local_cluster_with_it_on():
    from sparkpredict.capture.submit_args import MasterChange, dynamic_allocation_master

    on = ["--conf", "spark.dynamicAllocation.enabled=true"]
    assert dynamic_allocation_master(["--master", "local-cluster[1,2,1024]", *on, "job.py"], 3) == MasterChange(
        "local-cluster[1,2,1024]", "--master", "local-cluster[3,2,1024]")
    assert dynamic_allocation_master(["--master", "local-cluster[3,2,1024]", *on, "job.py"], 3) is None
    assert dynamic_allocation_master(["--master", "local-cluster[1,2,1024]", "job.py"], 3) is None
    assert dynamic_allocation_master(["--master", "local[1]", *on, "job.py"], 3) is None
    assert dynamic_allocation_master(["--master", "yarn", *on, "job.py"], 3) is None


def test_a_local_master_limit_is_at_least_one_executor(monkeypatch):
    """Executors wider than the machine's task slots: one may still run, not none."""
    import sparkpredict.sweep_plan as plan
    from sparkpredict.capture.submit_args import local_executor_limit

    wide = plan.OVERSUBSCRIBE * (os.cpu_count() or 1) + 1
    assert local_executor_limit(["--master", f"local-cluster[1,{wide},1024]", "job.py"]) == 1
    assert local_executor_limit(["--master", "local[*]", "--executor-cores", str(wide), "job.py"]) == 1
    assert local_executor_limit(["--master", "local[*]", "job.py"]) == plan.most_local_executors(1)


def test_the_cluster_deploy_mode_is_refused_on_a_local_master_only(fake_spark, job, tmp_path, capfd):
    record = fake_spark()
    for master in ("local[2]", "local-cluster[1,1,1024]"):
        assert main(["submit", "--store", str(tmp_path / "s"), "--", "--master", master, "--deploy-mode",
                     "cluster", job]) == 2
        err = capfd.readouterr().err
        assert "error: --deploy-mode cluster is not compatible with the master" in err, err
        assert not record.exists()
    assert main(["submit", "--store", str(tmp_path / "s"), "--", "--master", "yarn", "--deploy-mode", "cluster",
                 "app.py"]) == 0
    assert _argv(record)[-1] == "app.py"  # not looked for here: the cluster reads it


def test_a_conf_with_no_value_or_no_application_is_one_clear_error(fake_spark, tmp_path, capfd, monkeypatch):
    from sparkpredict.capture.submit_args import effective_master, given_settings

    monkeypatch.delenv("MASTER", raising=False)

    assert given_settings(["--master", "yarn", "--conf"]) == {}
    assert given_settings(["--master", "yarn", "--num-executors"]) == {}
    assert effective_master(["--master"]) == ("local[*]", "spark-submit's default")
    record = fake_spark()
    assert main(["submit", "--store", str(tmp_path / "s"), "--", "--master", "yarn", "--conf"]) == 2
    err = capfd.readouterr().err
    assert "error: no application given to spark-submit" in err and "Traceback" not in err, err
    assert not record.exists()


def test_without_a_spark_conf_folder_only_the_given_properties_files_are_read(tmp_path, monkeypatch):
    import sparkpredict.capture.submit_args as sa

    monkeypatch.setattr(sa, "spark_conf_dir", lambda: None)
    props = tmp_path / "my.conf"
    props.write_text("spark.master yarn\n")
    args = ["--properties-file", str(props), "--load-spark-defaults", "job.py"]
    assert sa.effective_master(args) == ("yarn", "my.conf")
    assert sa.effective_master(["job.py"]) == ("local[*]", "spark-submit's default")


def test_the_last_of_an_option_given_twice_wins_as_in_spark_submit(tmp_path, monkeypatch):
    from sparkpredict.capture.submit_args import (
        effective_master,
        given_settings,
        spark_submit_option,
    )

    monkeypatch.delenv("MASTER", raising=False)
    args = ["--master", "local[1]", "--num-executors", "2", "--master=yarn", "--num-executors", "5",
            "--conf", "spark.a=1", "--conf", "spark.a=2", "job.py"]
    assert effective_master(args) == ("yarn", "--master")
    assert given_settings(args)["spark.executor.instances"] == ("5", "--num-executors 5")
    assert given_settings(args)["spark.a"] == ("2", "--conf spark.a=2")
    # an empty value in a file is unset: spark-submit goes on to $MASTER, else its default
    props = tmp_path / "my.conf"
    props.write_text("spark.master =\n")
    assert effective_master(["--properties-file", str(props), "job.py"]) == ("local[*]", "spark-submit's default")
    assert spark_submit_option("--master=yarn") and spark_submit_option("--verbose")
    assert not spark_submit_option("--masters=yarn") and not spark_submit_option("job.py")


def test_local_counts_from_cores_that_spark_would_refuse_fall_back_to_one_core(monkeypatch):
    import sparkpredict.sweep_plan as plan
    from sparkpredict.capture.submit_args import local_executor_limit, local_master_for

    assert local_master_for(["--master", "local[1]", "--executor-cores", "0", "job.py"], 2).new == "local[2]"
    assert local_master_for(["--master", "local[1]", "--executor-cores", "3", "job.py"], 2).new == "local[6]"
    assert local_executor_limit(["--master", "local[*]", "--executor-cores", "two", "job.py"]) == \
        plan.most_local_executors(1)


def test_a_properties_files_start_count_names_its_file(tmp_path):
    from sparkpredict.capture.submit_args import dynamic_allocation_starts

    props = tmp_path / "my.conf"
    props.write_text("spark.dynamicAllocation.initialExecutors  50 \nspark.executor.instances x\n")
    args = ["--properties-file", str(props), "--num-executors", "7", "job.py"]
    assert dynamic_allocation_starts(args) == [
        ("spark.dynamicAllocation.initialExecutors", 50,
         f"spark.dynamicAllocation.initialExecutors=50 in {props}", False),
        ("spark.executor.instances", 7, "--num-executors 7", True)]


def test_an_application_path_with_a_colon_past_its_first_folder_is_a_file_here(tmp_path, monkeypatch):
    from sparkpredict.capture.submit_args import check_application
    from sparkpredict.errors import InputError

    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="is not a file here"):
        check_application(["--master", "yarn", "jobs/a:b.py"])
    check_application(["--master", "yarn", "hdfs://nn/jobs/a.py"])  # read on the cluster
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "a:b.py").write_text("")
    check_application(["--master", "yarn", "jobs/a:b.py"])


# --- what build_command adds --------------------------------------------------------------------

def _jar_option(argv: list[str]) -> list[str]:
    return [argv[i + 1].split(",") for i, a in enumerate(argv) if a == "--jars"]


def test_the_users_jars_join_the_listeners_in_one_jars_option(fake_spark, job, tmp_path, listener_jar):
    record = fake_spark()
    ours = str(listener_jar)
    assert main(["submit", "--store", str(tmp_path / "s"), "--", "--conf", "spark.jars=/x/a.jar", job]) == 0
    assert _jar_option(_argv(record)) == [["/x/a.jar", ours]]
    # spark-submit takes --jars over spark.jars: that list is the one the listener's joins
    assert main(["submit", "--store", str(tmp_path / "s"), "--", "--jars", "/x/b.jar", "--conf",
                 "spark.jars=/x/a.jar", job]) == 0
    assert _jar_option(_argv(record)) == [["/x/b.jar", ours]]


def test_what_submit_is_asked_for_goes_on_the_command_line(fake_spark, job, tmp_path):
    record = fake_spark()
    assert main(["submit", "--store", str(tmp_path / "s"), "--job", "etl", "--input-size", "1g", "--param",
                 "iterations=5", "--", "--master", "yarn", job]) == 0
    argv = _argv(record)
    assert _confs(argv, "spark.sparkpredict.inputBytes") == [str(2**30)]
    assert _confs(argv, "spark.sparkpredict.param.iterations") == ["5"]
    assert _confs(argv, "spark.sparkpredict.job") == ["etl"]
    assert len(_confs(argv, "spark.sparkpredict.submitId")) == 1


def test_build_command_tags_the_submit_only_when_asked(job, listener_jar, tmp_path):
    from sparkpredict.capture.submit import KEY_SUBMIT_ID, build_command

    assert _confs(build_command([job], store=str(tmp_path / "s"), submit_id="tag1"), KEY_SUBMIT_ID) == ["tag1"]
    assert _confs(build_command([job], store=str(tmp_path / "s")), KEY_SUBMIT_ID) == []


def test_a_local_masters_executor_cores_are_kept_as_the_key_spark_submit_does_not_drop(
        fake_spark, job, tmp_path):
    record = fake_spark()
    assert main(["submit", "--store", str(tmp_path / "s"), "--executors", "2", "--", "--master", "local[1]",
                 "--executor-cores", "2", job]) == 0
    argv = _argv(record)
    assert argv[argv.index("--master") + 1] == "local[4]"
    assert _confs(argv, "spark.executor.cores") == ["2"] and _confs(argv, "spark.executor.instances") == ["2"]
    # given as the key already, or on a cluster: nothing added
    assert main(["submit", "--store", str(tmp_path / "s"), "--executors", "2", "--", "--master", "local[1]",
                 "--conf", "spark.executor.cores=2", job]) == 0
    assert _confs(_argv(record), "spark.executor.cores") == ["2"]
    assert main(["submit", "--store", str(tmp_path / "s"), "--executors", "2", "--", "--master", "yarn",
                 "--executor-cores", "2", job]) == 0
    assert _confs(_argv(record), "spark.executor.cores") == []


def test_dynamic_allocations_bound_widens_a_local_cluster_on_the_command_line(job, listener_jar, tmp_path):
    from sparkpredict.capture.submit import build_command

    on = ["--conf", "spark.dynamicAllocation.enabled=true"]
    bound = {"spark.dynamicAllocation.minExecutors": "1", "spark.dynamicAllocation.maxExecutors": "2"}
    cmd = build_command(["--master", "local-cluster[1,1,1024]", *on, job], store=str(tmp_path / "s"),
                        extra_conf=bound)
    assert cmd[cmd.index("--master") + 1] == "local-cluster[2,1,1024]"
    assert _confs(cmd, "spark.dynamicAllocation.maxExecutors") == ["2"]
    cmd = build_command(["--master", "local-cluster[1,1,1024]", *on, job], store=str(tmp_path / "s"),
                        extra_conf={**bound, "spark.dynamicAllocation.maxExecutors": "0"})
    assert cmd[cmd.index("--master") + 1] == "local-cluster[1,1,1024]"  # no count: left alone


# --- the CLI's own checks -----------------------------------------------------------------------

def test_one_executor_and_an_empty_count_of_the_users_are_accepted(fake_spark, job, tmp_path):
    record = fake_spark()
    assert main(["submit", "--store", str(tmp_path / "s"), "--executors", "1", "--", "--master", "yarn", job]) == 0
    assert _confs(_argv(record), "spark.executor.instances") == ["1"]
    # an empty --conf is unset, for Spark and submit alike: no conflict, the count is submit's
    assert main(["submit", "--store", str(tmp_path / "s"), "--executors", "3", "--", "--master", "yarn",
                 "--conf", "spark.executor.instances=", job]) == 0
    assert _confs(_argv(record), "spark.executor.instances") == ["", "3"]


def test_a_local_drivers_memory_is_refused_below_the_least_spark_starts_only(fake_spark, job, tmp_path, capfd):
    fake_spark()
    for memory, refused in (("449m", True), ("450m", False)):
        assert main(["submit", "--store", str(tmp_path / "s"), "--job", "etl", "--input-size", "1g", "--executors",
                     "auto", "--", "--master", "local[1]", "--driver-memory", memory, job]) == 2
        err = capfd.readouterr().err
        assert ("is too small" in err) == refused, err


def test_dry_run_prints_the_command_and_runs_nothing(fake_spark, job, tmp_path, capfd):
    import shlex

    record = fake_spark()
    assert main(["submit", "--store", str(tmp_path / "s"), "--dry-run", "--", "--master", "yarn", job, "a b"]) == 0
    out = capfd.readouterr().out.strip()
    assert shlex.split(out)[-2:] == [job, "a b"] and not record.exists()
    assert "--" not in shlex.split(out)  # submit's separator is not spark-submit's argument
    # without the leading --, the application is spark-submit's all the same
    assert main(["submit", "--store", str(tmp_path / "s"), "--dry-run", job]) == 0
    assert shlex.split(capfd.readouterr().out.strip())[-1] == job


def test_a_count_below_one_and_a_size_split_by_the_shell_are_refused(fake_spark, job, tmp_path, capfd):
    record = fake_spark()
    assert main(["submit", "--store", str(tmp_path / "s"), "--executors", "0", "--", job]) == 2
    assert "error: --executors 0 must be at least 1" in capfd.readouterr().err
    assert main(["submit", "--store", str(tmp_path / "s"), "--input-size", "2", "GB", "--", job]) == 2
    assert "a size or duration typed with a space" in capfd.readouterr().err
    assert not record.exists()


def test_store_asked_for_outranks_a_properties_files_and_the_files_outranks_the_default(fake_spark, job, tmp_path):
    record = fake_spark()
    props = tmp_path / "my.conf"
    props.write_text(f"spark.sparkpredict.store  {tmp_path / 'files-store'}\n")
    assert main(["submit", "--store", str(tmp_path / "s"), "--", "--properties-file", str(props), job]) == 0
    assert _confs(_argv(record), "spark.sparkpredict.store") == [(tmp_path / "s").as_uri()]
    assert main(["submit", "--", "--properties-file", str(props), job]) == 0
    assert _confs(_argv(record), "spark.sparkpredict.store") == []  # the file's is the run's
