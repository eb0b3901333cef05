"""Interference bubbles: each generates its kind of load, and none outlives its bound."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from sparkpredict.bubbles import KINDS, WORKERS, Bubble
from sparkpredict.errors import InputError


def _proc(pid: int, name: str) -> str:
    return Path(f"/proc/{pid}/{name}").read_text()


def _cpu_s(pid: int) -> float:
    fields = _proc(pid, "stat").rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _io(pid: int, key: str) -> int:
    for line in _proc(pid, "io").splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


def _loopback_bytes() -> int:
    for line in Path("/proc/net/dev").read_text().splitlines():
        if line.strip().startswith("lo:"):
            return int(line.split(":", 1)[1].split()[0])
    raise KeyError("lo")


def _gone(pid: int) -> bool:
    try:
        state = _proc(pid, "stat").rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")  # exited, not yet reaped by its new parent


def _wait_gone(pids: list[int], timeout_s: float = 15.0) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if all(_gone(p) for p in pids):
            return True
        time.sleep(0.1)
    return False


def test_bad_arguments_are_refused_with_a_fix():
    with pytest.raises(InputError, match="unknown bubble kind 'gpu'") as e:
        Bubble("gpu")
    assert "cpu, memory, disk, network" in e.value.fix
    with pytest.raises(InputError, match="intensity must be 1, 2 or 3"):
        Bubble("cpu", intensity=7)
    with pytest.raises(InputError, match="bounded in time|max_s"):
        Bubble("cpu", max_s=10_000)


@pytest.mark.parametrize(("args", "says"), [
    ({"intensity": 2.0}, "intensity must be 1, 2 or 3, not 2.0"),
    ({"intensity": True}, "intensity must be 1, 2 or 3, not True"),
    ({"intensity": "2"}, "intensity must be 1, 2 or 3, not '2'"),
    ({"max_s": -5}, r"max_s must be a number of seconds in \(0, 3600\], not -5"),
    ({"max_s": 0}, r"in \(0, 3600\], not 0"),
    ({"max_s": float("nan")}, r"in \(0, 3600\], not nan"),
    ({"max_s": "10"}, r"in \(0, 3600\], not '10'"),
    ({"max_s": True}, r"in \(0, 3600\], not True"),
    ({"nice": True}, "nice must be a whole number in 0..19, not True"),
    ({"kind": "network", "rate_bytes": float("inf")}, "positive, finite number of bytes/s"),
    ({"kind": "network", "rate_bytes": "1e6"}, "positive, finite number of bytes/s"),
    ({"kind": "network", "rate_bytes": -1}, "positive, finite number of bytes/s"),
    ({"cpus": [0.7]}, "cpus must be CPU numbers, not \\[0.7\\]"),
    ({"cpus": "0"}, "cpus must be CPU numbers, not '0'"),
    ({"cpus": [True]}, "cpus must be CPU numbers"),
    ({"cpus": 1}, "cpus must be CPU numbers, not 1"),
    ({"cpus": []}, "cpus is empty"),
    ({"kind": "disk", "workdir": "/nonexistent/bubbles"}, "workdir '/nonexistent/bubbles' is not a folder"),
    ({"workdir": 5}, "workdir must be a folder path, not 5"),
    ({"kind": ["cpu"]}, "unknown bubble kind"),
])
def test_nonsense_arguments_are_a_value_error_naming_the_allowed_values(args, says):
    """Each would otherwise be taken and fail later, or not at all: 2.0 == 2 and True == 1 pass
    a lookup, yet the worker's command line reads "2.0" and "True" as no number (it dies at
    start); int(0.7) pins to CPU 0 and "12" pins to CPUs 1 and 2; an infinite rate is no pace."""
    with pytest.raises(ValueError, match=says) as e:
        Bubble(**{"kind": "cpu", **args})
    assert isinstance(e.value, InputError) and e.value.fix


def test_numpy_numbers_are_numbers():
    """A sweep's grid often comes from numpy: its integers and floats are taken as Python's."""
    b = Bubble("cpu", intensity=np.int64(2), max_s=np.float64(30), nice=np.int32(3),
               cpus=np.array(sorted(os.sched_getaffinity(0))[:1]))
    assert (type(b.intensity), type(b.max_s), type(b.nice)) == (int, float, int)
    assert (b.intensity, b.max_s, b.nice) == (2, 30.0, 3)
    assert Bubble("network", rate_bytes=1_000_000).rate_bytes == 1e6


@pytest.mark.parametrize("kind", KINDS)
def test_each_bubble_makes_its_load_and_stops(kind, tmp_path):
    lo_before = _loopback_bytes()
    with Bubble(kind, intensity=1, max_s=60, workdir=tmp_path) as b:
        pids = b.pids
        assert len(pids) == WORKERS[1]
        pid = pids[0]
        time.sleep(1.5)
        if kind == "cpu":
            assert _cpu_s(pid) > 0.05
        elif kind == "memory":
            rss_kib = int(next(line for line in _proc(pid, "status").splitlines()
                               if line.startswith("VmRSS")).split()[1])
            assert rss_kib > 500 * 1024  # two 256 MiB arrays, touched
            assert _cpu_s(pid) > 0.05
        elif kind == "disk":
            files = list(tmp_path.glob("sparkpredict-bubble-*"))
            assert len(files) == 1 and files[0].stat().st_size > 0
            assert _io(pid, "write_bytes") > 0  # reached the block device (fsync)
        else:
            sockets = [f for f in os.listdir(f"/proc/{pid}/fd")
                       if os.readlink(f"/proc/{pid}/fd/{f}").startswith("socket:")]
            assert len(sockets) >= 3  # listener, client and accepted connection
            assert _loopback_bytes() - lo_before > 10 << 20  # >10 MiB through loopback
            assert _cpu_s(pid) > 0.05
    assert b.pids == []
    assert _wait_gone(pids, 5)
    assert list(tmp_path.glob("sparkpredict-bubble-*")) == []  # the disk bubble cleans up


def test_cpus_pin_the_workers_and_bad_cpus_are_refused():
    last = max(os.sched_getaffinity(0))
    with Bubble("cpu", intensity=2, max_s=30, cpus=[last]) as b:
        assert [os.sched_getaffinity(p) for p in b.pids] == [{last}, {last}]
    with pytest.raises(InputError, match="not CPUs of this machine") as e:
        Bubble("cpu", cpus=[os.cpu_count() + 3])
    assert "pick among" in e.value.fix
    with pytest.raises(InputError, match="must be CPU numbers"):
        Bubble("cpu", cpus=["zero"])


def test_nice_lowers_the_workers_priority_and_bad_values_are_refused():
    with Bubble("memory", intensity=1, max_s=30, nice=19) as b:
        assert [os.getpriority(os.PRIO_PROCESS, p) for p in b.pids] == [19]
    for bad in (-1, 20, 2.5):
        with pytest.raises(InputError, match="nice must be a whole number in 0..19"):
            Bubble("cpu", nice=bad)


def test_a_paced_network_bubble_sends_at_its_rate():
    # unpaced, one worker pushes hundreds of MB/s over loopback and spends its core doing so;
    # paced at 1 MB/s it sleeps nearly all the time. CPU seconds are counted from "ready" on:
    # the worker's start-up (interpreter, imports) took 0.27 s alone on a slow CI machine.
    # The unpaced one gets what the machine spares: 0.62-0.70 s of the 2 s on 2 cores at a load
    # of 8.5 (one busy core beside it and other work), against the 0.0 paced. So its floor is
    # 0.25, and it must spend over twice the paced one's, which an unpaced "paced" one does not
    # whatever the load.
    def cpu_over_2s(pid: int) -> float:
        start = _cpu_s(pid)
        time.sleep(2.0)
        return _cpu_s(pid) - start

    with Bubble("network", intensity=1, max_s=30) as greedy:
        busy = cpu_over_2s(greedy.pids[0])
    with Bubble("network", intensity=1, max_s=30, rate_bytes=1e6) as paced:
        idle = cpu_over_2s(paced.pids[0])
    assert busy > 0.25 and idle < 0.2 and busy > 2 * idle, (busy, idle)
    for bad in ({"kind": "cpu", "rate_bytes": 1e6}, {"kind": "network", "rate_bytes": 0}):
        with pytest.raises(InputError, match="applies to a network bubble"):
            Bubble(**bad)


def test_intensity_sets_the_number_of_workers():
    with Bubble("cpu", intensity=2, max_s=30) as b:
        assert len(b.pids) == 2
    b.stop()  # a second stop is harmless


def test_a_bubble_stops_by_itself_after_max_s():
    b = Bubble("cpu", intensity=1, max_s=1.0).start()
    pids = b.pids
    assert len(pids) == 1  # a worker started: gone by itself, not never there
    assert _wait_gone(pids, 15)
    b.stop()


def test_workers_exit_when_the_process_that_started_them_dies():
    code = ("import os, sys\nfrom sparkpredict.bubbles import Bubble\n"
            "b = Bubble('cpu', 2, max_s=120).start()\n"
            "print(' '.join(map(str, b.pids)), flush=True)\nos._exit(0)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    pids = [int(p) for p in out.stdout.split()]
    assert len(pids) == 2
    assert _wait_gone(pids, 15)


def test_a_worker_that_dies_at_start_says_why(tmp_path):
    """The disk bubble's folder removed between construction and start: the worker dies before
    "ready", and the error carries the last line of its traceback (it used to read its stderr
    before the process had exited, and said nothing)."""
    gone = tmp_path / "gone"
    gone.mkdir()
    b = Bubble("disk", intensity=1, max_s=30, workdir=gone)
    gone.rmdir()
    with pytest.raises(RuntimeError, match="disk bubble worker failed to start: FileNotFoundError"):
        b.start()
    assert b.pids == []
