"""What capture refuses before Spark starts: a store the listener could not record into, a cache
that cannot be written, a setting given twice, an option that would change nothing. Each is one
``error:`` and one ``fix:`` line, exit status 2, and nothing run or created. No Spark here."""
from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import pytest

from sparkpredict import store as store_mod
from sparkpredict.capture import listener
from sparkpredict.cli import main
from sparkpredict.errors import InputError, StoreError


@pytest.fixture
def no_spark(monkeypatch):
    """submit's runs: any reaching spark-submit fail the test."""
    import sparkpredict.capture.submit as capture_submit

    calls: list = []

    def fake_submit(*args, **kwargs):
        calls.append((args, kwargs))
        raise AssertionError("spark-submit ran")

    monkeypatch.setattr(capture_submit, "submit", fake_submit)
    return calls


@pytest.fixture
def paths(tmp_path):
    (tmp_path / "afile").write_text("x")
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "readme.txt").write_text("hi")
    return tmp_path


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _unwritable(monkeypatch):
    """Make every probe folder fail as /sys or a read-only mount would, even for root."""
    def refuse(*args, **kwargs):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(tempfile, "mkdtemp", refuse)


@pytest.mark.parametrize("where, message, fix", [
    ("afile", "store path '{p}/afile' is a file", "give a folder path for the store"),
    ("afile/sub", "cannot write to store '{p}/afile/sub': {p}/afile is a file", "not under a file"),
    ("foreign", "folder '{p}/foreign' is not a sparkpredict store: it holds other files (readme.txt)",
     "an empty or new folder"),
])
def test_submit_refuses_a_store_it_could_not_record_into_before_spark(paths, no_spark, capsys, where, message, fix):
    before = _tree(paths)
    rc = main(["submit", "--store", str(paths / where), "--executors", "1", "--", "--master", "local[1]", "job.py"])
    err = capsys.readouterr().err
    assert rc == 2 and f"error: {message.format(p=paths)}\n" in err and fix in err.split("fix: ")[1], err
    assert not no_spark and _tree(paths) == before


def test_a_store_that_cannot_be_written_is_refused_and_probing_leaves_nothing(paths, no_spark, capsys, monkeypatch):
    new = paths / "new" / "store"
    assert listener.check_store(str(new)) is None      # a new store under a writable folder
    assert listener.check_store(str(paths / "foreign" / "sub")) is None
    assert _tree(paths) == ["afile", "foreign", "foreign/readme.txt"]  # the probe was removed
    _unwritable(monkeypatch)
    rc = main(["submit", "--store", str(new), "--", "--master", "local[1]", "job.py"])
    err = capsys.readouterr().err
    assert rc == 2 and f"error: cannot write to store '{new}': {paths} is not writable (Operation not permitted)" in err
    assert "fix: choose a writable folder, or fix its permissions" in err and not no_spark


def test_the_store_named_by_spark_submits_conf_is_checked_too(paths, no_spark, capsys):
    rc = main(["submit", "--", "--conf", f"spark.sparkpredict.store={paths / 'foreign'}", "--master", "local[1]",
               "job.py"])
    assert rc == 2 and "is not a sparkpredict store: it holds other files (readme.txt)" in capsys.readouterr().err


def test_a_cluster_deploy_modes_store_is_on_a_cluster_node_and_not_checked_here(paths):
    from sparkpredict.capture.submit_args import driver_is_local

    assert driver_is_local(["--master", "yarn", "job.py"])
    assert not driver_is_local(["--master", "yarn", "--deploy-mode", "cluster", "job.py"])
    assert not driver_is_local(["--conf", "spark.submit.deployMode=cluster", "job.py"])


def test_a_store_of_a_newer_schema_is_refused_before_the_run(paths):
    from sparkpredict.store import schema as S

    st = paths / "st"
    store_mod.open(st, create=True)
    (st / S.MARKER_FILE).write_text(json.dumps({"format": S.STORE_FORMAT, "schema_version": S.SCHEMA_VERSION + 1}))
    with pytest.raises(StoreError, match="newer than the version"):
        listener.check_store(str(st))


def test_attach_and_listener_conf_refuse_the_same_stores(paths, capsys):
    with pytest.raises(StoreError, match=r"it holds other files \(readme.txt\)"):
        listener.attach(object(), store=str(paths / "foreign"))
    with pytest.raises(StoreError, match="is a file"):
        listener.attach(object(), store=str(paths / "afile" / "sub"))
    assert main(["listener", "conf", "--store", str(paths / "foreign")]) == 2
    assert "error: folder" in capsys.readouterr().err
    # a URI is the listener's file system's to reach: not probed from Python
    assert listener.check_store("hdfs://namenode/store") is None


# ---- the cache ----------------------------------------------------------------------------

def test_an_unwritable_listener_cache_is_an_error_not_a_traceback(paths, capsys, monkeypatch):
    monkeypatch.setenv("SPARKPREDICT_CACHE", str(paths / "afile"))
    assert main(["listener", "build"]) == 2
    err = capsys.readouterr().err
    assert f"error: cannot write the cache '{paths}/afile/listener': {paths}/afile is a file\n" in err
    assert "fix: set SPARKPREDICT_CACHE to a writable folder" in err
    monkeypatch.setenv("SPARKPREDICT_CACHE", str(paths / "cache"))
    _unwritable(monkeypatch)
    with pytest.raises(InputError, match=r"cannot write the cache .*/cache/listener': .* is not writable"):
        listener.build_listener(force=True)


def test_a_sweep_refuses_an_unwritable_cache_before_creating_its_store(paths, capsys):
    store = paths / "store"
    rc = main(["sweep", "--workload", "sort", "--sizes", "2MB", "--executors", "1", "--master", "local",
               "--cache", str(paths / "afile"), "--store", str(store)])
    err = capsys.readouterr().err
    assert rc == 2 and f"error: cannot write the cache '{paths}/afile': it is a file" in err
    assert "fix: give --cache a writable folder" in err
    assert not store.exists() and not (paths / "sweep-work").exists()


def test_generating_data_into_an_unwritable_cache_is_an_input_error(paths):
    from sparkpredict.workloads import generate as gen

    with pytest.raises(InputError, match=r"cannot write the cache '.*/afile': it is a file"):
        gen.ensure_data("sort", lambda *a: None, 1000, 0, paths / "afile")


# ---- reading a path that holds no store ----------------------------------------------------

def test_opening_a_file_or_a_foreign_folder_says_so_not_record_a_run_first(paths, capsys):
    with pytest.raises(StoreError) as e:
        store_mod.open(paths / "afile")
    assert e.value.message == f"store path '{paths}/afile' is a file, not a store's folder"
    assert "record a run" not in e.value.fix and "store's folder" in e.value.fix
    with pytest.raises(StoreError) as e:
        store_mod.open(paths / "foreign")
    assert "it holds other files (readme.txt)" in e.value.message and "empty or new folder" in e.value.fix
    assert "record a run" not in e.value.fix
    with pytest.raises(StoreError, match="no sparkpredict store at"):  # missing: recording fixes it
        store_mod.open(paths / "missing")
    assert main(["runs", "--store", str(paths / "afile"), "--out", str(paths / "r.csv")]) == 2
    assert "is a file, not a store's folder" in capsys.readouterr().err and not (paths / "r.csv").exists()


# ---- settings given twice, options that change nothing -------------------------------------

@pytest.mark.parametrize("ours, theirs, message, drop", [
    (["--executors", "2"], ["--num-executors", "3"],
     "--executors 2 and --num-executors 3 both set the executor count", "drop --num-executors, or --executors"),
    (["--executors", "2"], ["--num-executors", "2"],  # alike, yet the local master would stay local[2]
     "--executors 2 and --num-executors 2 both set the executor count", "drop --num-executors"),
    (["--executors", "2"], ["--conf", "spark.executor.instances=3"],
     "--executors 2 and --conf spark.executor.instances=3 both set", "drop --conf spark.executor.instances"),
    (["--job", "tinyjob"], ["--conf", "spark.sparkpredict.job=otherjob"],
     "--job tinyjob and --conf spark.sparkpredict.job=otherjob name different jobs",
     "drop --conf spark.sparkpredict.job, or --job"),
    (["--input-size", "1MB"], ["--conf", "spark.sparkpredict.inputBytes=5MB"],
     "--input-size 1MB and --conf spark.sparkpredict.inputBytes=5MB declare different input sizes",
     "drop --conf spark.sparkpredict.inputBytes, or --input-size"),
    (["--param", "iterations=25"], ["--conf", "spark.sparkpredict.param.iterations=30"],
     "--param iterations=25 and --conf spark.sparkpredict.param.iterations=30 give the parameter different",
     "drop --conf spark.sparkpredict.param.iterations, or --param"),
])
def test_a_setting_given_to_submit_and_to_spark_submit_is_an_error(tmp_path, no_spark, capsys, ours, theirs,
                                                                    message, drop):
    rc = main(["submit", "--store", str(tmp_path / "s"), *ours, "--", "--master", "local[2]", *theirs, "job.py"])
    err = capsys.readouterr().err
    assert rc == 2 and f"error: {message}" in err and drop in err, err
    assert not no_spark and not (tmp_path / "s").exists()


def test_a_setting_given_twice_alike_is_no_conflict():
    from sparkpredict.cli.submit import check_given_once

    args = argparse.Namespace(executors=None, job="j", input_size="1MiB")
    spark_args = ["--conf", "spark.sparkpredict.job=j", "--conf", "spark.sparkpredict.inputBytes=1048576",
                  "--conf", "spark.sparkpredict.param.k=3.0", "--num-executors", "4", "job.py"]
    assert check_given_once(args, spark_args, 1048576, {"k": "3"}) is None
    # with dynamic allocation the advice sets its bounds: a count asked for is where it starts
    # (on a cluster: a local master has no dynamic allocation, tests/test_submit_auto.py)
    auto = argparse.Namespace(executors="auto", job="j", input_size=None)
    dyn = ["--master", "yarn", "--conf", "spark.dynamicAllocation.enabled=true", "--num-executors", "4", "job.py"]
    assert check_given_once(auto, dyn, None, {}) is None
    with pytest.raises(InputError, match="--executors auto and --conf spark.dynamicAllocation.maxExecutors=9"):
        check_given_once(auto, [*dyn[:-1], "--conf", "spark.dynamicAllocation.maxExecutors=9", "job.py"], None, {})


@pytest.mark.parametrize("options, message", [
    (["--executors", "1", "--deadline", "soon", "--objective", "time"],
     "--deadline and --objective apply to --executors auto only, and would change nothing with --executors 1"),
    (["--objective", "knee"], "--objective applies to --executors auto only, and would change nothing with no --executors"),
    (["--deadline", "30m"], "--deadline applies to --executors auto only"),
    (["--budget", "2", "--price", "0.5", "--confidence", "0.8"],
     "--budget, --price and --confidence apply to --executors auto only"),
])
def test_advice_options_without_executors_auto_are_refused(tmp_path, no_spark, capsys, options, message):
    rc = main(["submit", "--store", str(tmp_path / "s"), "--job", "tinyjob", *options, "--", "job.py"])
    err = capsys.readouterr().err
    assert rc == 2 and f"error: {message}" in err and "fix: drop --" in err and "--executors auto" in err
    assert not no_spark


def test_an_unreadable_deadline_with_executors_auto_is_refused(tmp_path, no_spark, capsys):
    rc = main(["submit", "--store", str(tmp_path / "s"), "--job", "j", "--input-size", "1GB", "--executors", "auto",
               "--deadline", "soon", "--", "--master", "local[1]", "job.py"])
    assert rc == 2 and "soon" in capsys.readouterr().err and not no_spark


# ---- usage ---------------------------------------------------------------------------------

def test_an_unknown_option_shows_the_subcommands_usage(capsys):
    with pytest.raises(SystemExit) as e:
        main(["submit", "--bogus"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.startswith("usage: sparkpredict submit [-h] [--store STORE]")
    assert "sparkpredict submit: error: unrecognized arguments: --bogus" in err
    assert "fix: see `sparkpredict submit --help`" in err


def test_listener_without_an_action_says_what_to_add(capsys):
    assert main(["listener"]) == 2
    err = capsys.readouterr().err
    assert "error: no listener action given" in err and "sparkpredict listener build" in err

