"""An executor lost mid-stage, as spot or preemptible capacity is taken back: a partition
function that SIGKILLs its own executor JVM once (the ``local-cluster`` tests of lost
executors: resubmitted map tasks, a reduce stage's fetch failure, a map stage's lost outputs)."""
from __future__ import annotations


def kill_executor_once(marker: str, index: int, pause_s: float = 0.5):
    """For ``mapPartitionsWithIndex``: partition ``index`` SIGKILLs the executor JVM it runs in
    (once: ``marker`` is the file that says it happened) after ``pause_s``, in which the other
    partitions finish on both executors; the rows pass through unchanged."""

    def run(i, rows):
        import os
        import signal
        import time

        rows = list(rows)
        time.sleep(pause_s)
        if i == index and not os.path.exists(marker):
            open(marker, "w").close()
            pid = os.getpid()
            while pid > 1:  # Python worker -> pyspark daemon -> the executor's JVM
                with open(f"/proc/{pid}/status") as f:
                    pid = int(next(ln for ln in f if ln.startswith("PPid:")).split()[1])
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if b"CoarseGrainedExecutorBackend" in f.read():
                        os.kill(pid, signal.SIGKILL)
                        os._exit(1)  # this task dies with its executor
        return rows

    return run


def executors_alive(sc) -> int:
    """Executors registered with ``sc`` now, the driver left out."""
    return len(sc._jsc.sc().statusTracker().getExecutorInfos()) - 1


def wait_for_executors(sc, count: int, timeout_s: float = 180) -> None:
    """Return once ``count`` executors have registered with ``sc``. A local-cluster starts its
    executor JVMs side by side, but the session is back before they are up and a job's tasks go
    to the first one registered: beside a busy core the second came 0.84 s after the first, and
    the first job's first task 0.6 s after that. Had it come later, one executor would run the
    whole first stage, and killing it (or the other) would not be the loss these tests make."""
    import time

    deadline = time.monotonic() + timeout_s
    while executors_alive(sc) < count:
        assert time.monotonic() < deadline, f"{count} executors did not register in {timeout_s} s"
        time.sleep(0.1)
