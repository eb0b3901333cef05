"""A review of the sweep, each finding reproduced before it was fixed: SIGTERM and SIGHUP taken
as Ctrl-C (nothing half-written left behind), the disk checked before data is generated, the
work folder (remote stores, commas, --workdir, no store left by a refusal), the plan's bounds
and argument types, and the jobs/ scripts' usage errors."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from child_signals import sighup_as_from_a_terminal
from test_sweep import SIGNALLED_SWEEP

from sparkpredict import sweep as S
from sparkpredict import workloads as W
from sparkpredict.errors import InputError

MB = 1000**2
JOBS = Path(__file__).resolve().parents[1] / "jobs"


def _cli(*args: str, timeout: float = 120, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sparkpredict", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, check=False)


def _one_error(r: subprocess.CompletedProcess) -> tuple[str, str]:
    """The error and fix lines of a refused command (exit 2, no traceback)."""
    assert r.returncode == 2, r.stderr[-3000:]
    assert "Traceback" not in r.stderr and r.stderr.count("error:") == 1, r.stderr[-3000:]
    lines = r.stderr.splitlines()
    errors = [line for line in lines if line.startswith("error:")]
    assert errors, r.stderr[-3000:]
    err = errors[0]
    fix = lines[lines.index(err) + 1]
    assert fix.startswith("fix:"), r.stderr
    return err, fix


def _record(store: str, plan: S.SweepPlan) -> None:
    """Record every run of ``plan`` as succeeded, as the listener writes a sweep's run: the sweep
    then has nothing left to run (and starts no Spark)."""
    import pandas as pd

    from sparkpredict.store import io as store_io

    ids = [f"r{i}" for i in range(len(plan.combos))]
    props = [json.dumps({S.KEY_SWEEP: c.key(plan.workload), S.KEY_SEED: str(plan.seed)}) for c in plan.combos]
    rows = pd.DataFrame({"run_id": ids, "app_id": ids, "job": [plan.workload] * len(ids),
                         "status": ["succeeded"] * len(ids), "properties_json": props, "updated_ms": [1] * len(ids)})
    store_io.open(store, create=True).append({"runs": rows})


# ---- 1. SIGTERM and SIGHUP -------------------------------------------------------------------

def test_sigterm_while_generating_removes_the_half_written_data_set(tmp_path):
    """SIGTERM (a scheduler stopping the sweep) ended the process at once: the hidden folder of
    the data set being generated stayed in the cache for good (1.8 GB in the reviewer's case)."""
    cache, store = tmp_path / "cache", tmp_path / "store"
    p = subprocess.Popen([sys.executable, "-m", "sparkpredict", "sweep", "--workload", "sort", "--sizes", "1GB",
                          "--executors", "1", "--master", "local", "--store", str(store), "--cache", str(cache)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not list(cache.glob(".sort-*.tmp/part-*")):
            assert p.poll() is None and time.monotonic() < deadline, "the sweep never started generating"
            time.sleep(0.01)
        os.kill(p.pid, signal.SIGTERM)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    assert p.returncode == 128 + signal.SIGTERM, err[-3000:]
    assert f"terminated (signal {int(signal.SIGTERM)}): runs finished so far are recorded; rerun the same " \
           "command to resume" in err
    assert "Traceback" not in err
    assert list(cache.iterdir()) == []


def test_a_generation_folder_left_by_a_killed_generator_is_removed_once_stale(tmp_path):
    """A generator killed outright (SIGKILL) runs no cleanup: its hidden folder stayed for good.
    The next generation removes those nothing has written for an hour; a younger one may be
    another process generating that data set now, and anything not named as ours stays."""
    hour_ago = time.time() - 3700

    def folder(name: str, old_folder: bool, old_file: bool) -> Path:
        d = tmp_path / name
        (d / "orders").mkdir(parents=True)
        (d / "orders" / "part-00000.txt").write_bytes(b"1,2,3.0,4\n")
        if old_file:
            os.utime(d / "orders" / "part-00000.txt", (hour_ago, hour_ago))
        for sub in (d / "orders", d):
            if old_folder:
                os.utime(sub, (hour_ago, hour_ago))
        return d

    stale = folder(".sqljoin-s0-5000000B.0123abcd.tmp", old_folder=True, old_file=True)
    writing = folder(".sqljoin-s0-6000000B.89abcdef.tmp", old_folder=True, old_file=False)
    just_made = folder(".wordcount-s0-7000000B.00ff00ff.tmp", old_folder=False, old_file=True)
    not_ours = folder(".my-notes.tmp", old_folder=True, old_file=True)
    path = W.get("wordcount").data("1MB", cache_dir=tmp_path)
    assert not stale.exists()
    assert writing.exists() and just_made.exists() and not_ours.exists()
    assert (path / "_manifest.json").is_file()




def _signal_sweep(tmp_path: Path, during: str, signum: int, group: bool = False) -> tuple[int, str]:
    """A sweep sent ``signum`` while its warm-up's or its first run's job runs; with ``group``,
    its driver JVM too (its process group), as systemd or a closed terminal sends it."""
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    with sighup_as_from_a_terminal():
        p = subprocess.Popen([sys.executable, "-c", SIGNALLED_SWEEP, str(tmp_path / "store"), str(tmp_path / "cache"),
                              during, "1"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "RUNNING", p.stderr and p.stderr.read()[-3000:]
        time.sleep(1.0)  # the job's tasks are running
        if group:
            os.killpg(p.pid, signum)
        else:
            os.kill(p.pid, signum)
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    noise = [ln for ln in err.splitlines() if "Traceback" in ln or "ERROR" in ln or "Error" in ln
             or "Exception" in ln or "KeyboardInterrupt" in ln]
    assert not noise, err[-3000:]
    assert f"terminated (signal {signum}): runs finished so far are recorded; rerun the same command to resume" in err
    return p.returncode, err


@pytest.mark.spark
def test_sigterm_to_the_sweep_and_its_jvm_during_the_warm_up_removes_its_scratch_store(listener_jar, tmp_path):
    """SIGTERM killed the sweep at once: the warm-up's scratch store stayed in sweep-work. Sent to
    the process group (systemd, a container's stop), it ends the driver JVM too, and PySpark's
    stop then raised a Py4JError over the sweep's line."""
    from sparkpredict.store import io as store_io

    rc, err = _signal_sweep(tmp_path, "warmup", signal.SIGTERM, group=True)
    assert rc == 128 + signal.SIGTERM, err[-3000:]
    local = tmp_path / "sweep-work" / "spark-local"
    assert local.is_dir() and not list(local.glob("warmup-store-*"))
    assert store_io.open(tmp_path / "store").runs().empty  # the warm-up is never the sweep's


@pytest.mark.spark
def test_sighup_during_a_run_cancels_it_and_records_it_failed(listener_jar, tmp_path):
    """SIGHUP (the terminal closed) killed the sweep at once; now as Ctrl-C: the run's jobs are
    cancelled, its application stopped and recorded as failed, exit 128 + 1."""
    from sparkpredict.store import io as store_io

    rc, err = _signal_sweep(tmp_path, "run", signal.SIGHUP)
    assert rc == 128 + signal.SIGHUP, err[-3000:]
    runs = store_io.open(tmp_path / "store").runs()
    assert list(runs["status"]) == ["failed"]
    assert not list((tmp_path / "sweep-work" / "spark-local").glob("warmup-store-*"))


def test_terminated_is_one_class_that_submit_and_the_sweep_raise():
    from sparkpredict.capture import submit
    from sparkpredict.errors import Terminated
    from sparkpredict.sweep_session import _Interrupts

    assert submit.Terminated is Terminated and issubclass(Terminated, KeyboardInterrupt)
    it = _Interrupts()
    it.requested, it.signum = True, signal.SIGTERM
    with pytest.raises(Terminated) as e:
        it.check()
    assert e.value.signum == signal.SIGTERM and it.exit_code == 143


# ---- 2. the disk -------------------------------------------------------------------------------

def test_a_sweep_larger_than_the_free_disk_is_refused_before_anything_is_written(tmp_path):
    """--sizes 100TB started writing 100 TB with 59 GB free."""
    store, cache = tmp_path / "store", tmp_path / "cache"
    r = _cli("sweep", "--workload", "wordcount", "--sizes", "2MB,100TB", "--executors", "1", "--master", "local",
             "--store", str(store), "--cache", str(cache), timeout=30)
    err, fix = _one_error(r)
    assert "the wordcount inputs still to generate (2 MB, 100 TB" in err and "would not fit in the cache" in err
    assert "is free there" in err
    assert "--cache" in fix and "--sizes" in fix and "free disk space" in fix
    assert not store.exists() and not cache.exists() and not (tmp_path / "sweep-work").exists()


# ---- 3. and 4. the work folder ----------------------------------------------------------------

def test_a_remote_store_keeps_its_work_folder_under_home_not_in_the_current_folder(tmp_path, monkeypatch):
    """A store s3://bucket/hist made the folder ./s3:/bucket/sweep-work wherever the sweep ran."""
    import pyarrow.fs as pafs
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                     "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}.items():
            monkeypatch.setenv(k, v)
        pafs.S3FileSystem(endpoint_override=f"{host}:{port}", scheme="http", region="us-east-1",
                          allow_bucket_creation=True).create_dir("hist")
        uri = f"s3://hist/sweep?endpoint_override={host}:{port}&scheme=http&region=us-east-1"
        plan = S.plan_sweep("sort", "1MB", "1", master="local")
        _record(uri, plan)
        (tmp_path / "cwd").mkdir()
        monkeypatch.chdir(tmp_path / "cwd")
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        res = S.run_sweep(plan, store=uri, cache_dir=tmp_path / "cache")
    finally:
        server.stop()
    assert [o.status for o in res.outcomes] == ["skipped"]
    assert list((tmp_path / "cwd").iterdir()) == []
    assert (tmp_path / "home" / ".sparkpredict" / "sweep-work" / "spark-local").is_dir()


def test_a_refused_work_folder_leaves_no_store_behind(tmp_path):
    """The store was created before the work folder was tried: a refused sweep left an empty one."""
    (tmp_path / "afile").write_text("a file where the work folder should go")
    plan = S.plan_sweep("sort", "1MB", "1", master="local")
    with pytest.raises(InputError) as e:
        S.run_sweep(plan, store=tmp_path / "store", cache_dir=tmp_path / "cache", workdir=tmp_path / "afile" / "w")
    assert not (tmp_path / "store").exists() and not (tmp_path / "cache").exists()
    assert "cannot write the sweep's work folder" in e.value.message
    assert "--workdir" in e.value.fix and "workdir=" in e.value.fix


def test_a_work_folder_with_a_comma_is_refused_and_workdir_is_a_sweep_option(tmp_path):
    """spark.local.dir is a comma-separated list: a work folder "w,x" scattered Spark's scratch
    over two other folders. The sweep had no --workdir, which its fixes name."""
    store, cache = tmp_path / "store", tmp_path / "cache"
    args = ["sweep", "--workload", "sort", "--sizes", "1MB", "--executors", "1", "--master", "local",
            "--cache", str(cache)]
    err, fix = _one_error(_cli(*args, "--store", str(store), "--workdir", str(tmp_path / "w,x")))
    assert f"the sweep's work folder '{tmp_path}/w,x' holds a comma" in err and "spark.local.dir" in err
    assert "--workdir" in fix
    # the default work folder, beside the store
    err, fix = _one_error(_cli(*args, "--store", str(tmp_path / "a,b" / "store")))
    assert f"'{tmp_path}/a,b/sweep-work' holds a comma" in err and "a store whose path has none" in fix
    assert sorted(p.name for p in tmp_path.iterdir()) == []

    # the demo's work folder too, before its sweep (and its header's promise) starts anything
    err, fix = _one_error(_cli("demo", "--store", str(tmp_path / "my store"), "--workdir", str(tmp_path / "w,y")))
    assert "the demo's work folder" in err and "holds a comma" in err and "--workdir" in fix
    assert sorted(p.name for p in tmp_path.iterdir()) == []

    # --workdir is where the sweep's scratch goes (a sweep with nothing left to run starts no Spark)
    plan = S.plan_sweep("sort", "1MB", "1", master="local")
    _record(str(store), plan)
    r = _cli(*args, "--store", str(store), "--workdir", str(tmp_path / "wd"))
    assert r.returncode == 0 and "nothing left to run" in r.stderr, r.stderr[-3000:]
    assert (tmp_path / "wd" / "spark-local").is_dir() and not (tmp_path / "sweep-work").exists()
    helped = " ".join(_cli("sweep", "--help").stdout.split())
    assert "--workdir DIR" in helped and "~/.sparkpredict/sweep-work for a remote store" in helped


# ---- 5. and 6. the plan ----------------------------------------------------------------------

def test_a_sweep_of_more_runs_than_the_limit_is_refused_before_its_list_is_built(tmp_path):
    """--repeats 10000000 built its list of runs until a MemoryError traceback."""
    from sparkpredict.sweep_plan import MAX_RUNS

    assert len(S.plan_sweep("sort", "1MB", "1", repeats=MAX_RUNS, master="local").combos) == MAX_RUNS
    with pytest.raises(InputError) as e:
        S.plan_sweep("sort", "1MB,2MB", "1", repeats=MAX_RUNS // 2 + 1, master="local")
    assert e.value.message.startswith(f"the sweep would be {MAX_RUNS + 2:,} runs (2 size(s) x 1 executor count(s)")
    assert "--repeats" in e.value.fix
    err, fix = _one_error(_cli("sweep", "--workload", "sort", "--sizes", "1MB", "--executors", "1", "--master",
                               "local", "--repeats", "10000000", "--store", str(tmp_path / "store"), timeout=60))
    assert "10,000,000 runs" in err and f"{MAX_RUNS:,}" in err and "--repeats" in fix
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize("kwargs, message, fix", [
    ({"repeats": 1.9}, "repeats must be a whole number, not 1.9", "--repeats"),
    ({"repeats": "x"}, "repeats must be a whole number, not 'x'", "repeats="),
    ({"repeats": None}, "repeats must be a whole number, not None", "--repeats"),
    ({"repeats": True}, "repeats must be a whole number, not True", "--repeats"),
    ({"executor_memory_mb": "1g"}, "executor_memory_mb must be a whole number, not '1g'", "--executor-memory"),
    ({"executor_cores": 1.5}, "executor_cores must be a whole number, not 1.5", "--executor-cores"),
    ({"executor_cores": True}, "executor_cores must be a whole number, not True", "executor_cores="),
])
def test_plan_sweep_refuses_what_is_not_a_whole_number(kwargs, message, fix):
    """repeats=1.9 planned 1 repeat silently, 'x' and None raised bare ValueError and TypeError,
    executor_memory_mb='1g' a TypeError, executor_cores=1.5 or True a wrong master-URL error."""
    import numpy as np

    with pytest.raises(InputError) as e:
        S.plan_sweep("sort", "1MB", "1", master="yarn", **kwargs)
    assert e.value.message == message and fix in e.value.fix
    # a numpy integer is a whole number
    (name,) = kwargs
    plan = S.plan_sweep("sort", "1MB", "1", master="yarn", **{name: np.int64(2048 if "memory" in name else 2)})
    assert type(getattr(plan, name)) is int


# ---- 7. the jobs/ scripts --------------------------------------------------------------------

@pytest.mark.parametrize("args, message, fix", [
    (["--seed", "x"], "argument --seed: invalid int value: 'x'", "fix: see `jobs/wordcount.py --help`"),
    (["--bogus"], "unrecognized arguments: --bogus", "fix: see `jobs/wordcount.py --help`"),
    (["--sizee", "2MB"], "unrecognized arguments: --sizee", "fix: did you mean --size?"),
    # argparse took -5MB for an option ("expected one argument"); the size's check says what is wrong
    (["--size", "-5MB"], "error: size '-5MB' must be positive", "fix: give a size above zero"),
])
def test_a_job_scripts_usage_error_ends_with_a_fix_line(args, message, fix):
    r = subprocess.run([sys.executable, str(JOBS / "wordcount.py"), *args], capture_output=True, text=True,
                       timeout=120, check=False)
    assert r.returncode == 2 and message in r.stderr and fix in r.stderr, r.stderr[-2000:]
    assert "Traceback" not in r.stderr and "expected one argument" not in r.stderr


# ---- 8., 9. and 12. messages and help --------------------------------------------------------

def test_an_empty_list_is_named_as_the_list_it_is():
    """`--executors ,` said "empty list of ints", its fix suggesting 64MB,128MB."""
    with pytest.raises(InputError) as e:
        S.parse_list(",", "ints")
    assert e.value.message == "empty list of executor counts" and "1,2,3" in e.value.fix and "MB" not in e.value.fix
    with pytest.raises(InputError) as e:
        S.parse_list(" ", "sizes")
    assert e.value.message == "empty list of sizes" and "64MB,128MB" in e.value.fix and "1,2,3" not in e.value.fix


def test_a_failed_run_is_listed_with_its_size_in_units():
    """The failed-run line printed raw bytes: `failed: 64000000 B x 2 executors`."""
    from sparkpredict.cli.sweep import failed_line

    plan = S.plan_sweep("sort", "64MB", "2", master="local")
    out = S.RunOutcome(plan.combos[0], "failed", error="Py4JJavaError: boom")
    assert failed_line(out) == "  failed: 64 MB x 2 executors (repeat 0): Py4JJavaError: boom"


def test_the_cache_help_names_its_environment_variable_and_executor_cores_has_help():
    sweep_help = " ".join(_cli("sweep", "--help").stdout.split())
    assert "(default $SPARKPREDICT_CACHE/data, else ~/.cache/sparkpredict/data)" in sweep_help
    assert "--executor-cores EXECUTOR_CORES cores per executor" in sweep_help
    job = subprocess.run([sys.executable, str(JOBS / "sort.py"), "--help"], capture_output=True, text=True,
                         timeout=120, check=True)
    assert "(default $SPARKPREDICT_CACHE/data, else ~/.cache/sparkpredict/data)" in " ".join(job.stdout.split())
