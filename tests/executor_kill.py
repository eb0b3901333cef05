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
