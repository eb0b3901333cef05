"""A driver killed after its first job: earlier batches stay readable, status is not succeeded."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from child_signals import sighup_as_from_a_terminal

from sparkpredict import store as store_mod

pytestmark = pytest.mark.spark
JOB = Path(__file__).parent / "data" / "capture" / "wordcount_job.py"


def _start(store: Path, job: str, log: Path, *args: str) -> subprocess.Popen:
    from sparkpredict.capture.submit import build_command

    cmd = build_command(["--master", "local[1]", "--driver-memory", "512m", "--conf", "spark.ui.enabled=false",
                         str(JOB), "--sleep", "300", *args], store=str(store), job=job)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    # A session of its own, so that the Python driver child can be reaped with its JVM.
    with sighup_as_from_a_terminal():
        return subprocess.Popen(cmd, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
                                start_new_session=True)


def test_killed_drivers_keep_their_first_batch(listener_jar, runs_so_far, tmp_path):
    # SIGTERM's driver had a job fail first: its run was recorded killed with that job's error
    procs = {sig: _start(tmp_path / sig.name, f"killed-{sig.name}", tmp_path / f"{sig.name}.log",
                         *(["--failed-job-first"] if sig == signal.SIGTERM else []))
             for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGKILL)}
    try:
        pending = dict(procs)
        deadline = time.time() + 240
        while pending and time.time() < deadline:
            for sig, p in list(pending.items()):
                assert p.poll() is None, (tmp_path / f"{sig.name}.log").read_text()[-3000:]
                # mid-run: the word count done (and committed), the driver asleep
                done = "first job done" in (tmp_path / f"{sig.name}.log").read_text()
                if done and runs_so_far(tmp_path / sig.name) is not None:
                    os.kill(p.pid, sig)  # the spark-submit process is the driver JVM (exec'd)
                    del pending[sig]
            time.sleep(0.5)
        assert not pending, "no batch was committed in time"
        for p in procs.values():
            p.wait(timeout=120)
    finally:
        for p in procs.values():
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
    # SIGHUP: a closed terminal; it was recorded succeeded, and a resumed sweep skipped the run
    for sig, status in ((signal.SIGTERM, "killed"), (signal.SIGHUP, "killed"), (signal.SIGKILL, "running")):
        st = store_mod.open(tmp_path / sig.name)
        run = st.runs().iloc[0]
        assert run.status == status, (sig, run.status)
        stages, tasks = st.stages(), st.tasks()
        first = 1 if sig == signal.SIGTERM else 0  # the word count's job
        assert len(stages) >= 2 and (stages["job_id"] == first).sum() == 2
        assert stages["num_task_rows"].sum() == len(tasks) >= 8
    for sig in ("SIGTERM", "SIGHUP"):
        killed = store_mod.open(tmp_path / sig).runs().iloc[0]
        assert killed.error_message.startswith(f"driver received {sig}") and killed.end_ms >= killed.start_ms
