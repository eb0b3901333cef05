"""Interference bubbles: each generates its kind of load, and none outlives its bound."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

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
    def cpu_over_2s(pid: int) -> float:
        start = _cpu_s(pid)
        time.sleep(2.0)
        return _cpu_s(pid) - start

    with Bubble("network", intensity=1, max_s=30) as greedy:
        busy = cpu_over_2s(greedy.pids[0])
    with Bubble("network", intensity=1, max_s=30, rate_bytes=1e6) as paced:
        idle = cpu_over_2s(paced.pids[0])
    assert busy > 0.5 and idle < 0.2, (busy, idle)
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
