"""Mutation-audit gaps of capture and sweep planning: building the listener jar (its cache key,
its contents, a failing compiler), the listener's settings and store checks, event-log reading
(listener.py, eventlog.py) and a sweep's up-front checks (sweep_plan.py, sweep.py). Each test
pins a boundary that a mutant of that code passed every other JVM-free test with."""
from __future__ import annotations

import hashlib
import os
import zipfile
from pathlib import Path

import pytest

from sparkpredict import __version__
from sparkpredict.capture import listener
from sparkpredict.errors import ListenerError

# ---- building the jar (the real javac, counted by a spy around subprocess.run) ------------------

def _javac_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """A fresh cache, and the javac command lines build_listener runs from now on (each still runs)."""
    import subprocess

    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    calls: list[list[str]] = []
    real = subprocess.run

    def spy(cmd, *args, **kwargs):
        if Path(str(cmd[0])).name == "javac":
            calls.append([str(c) for c in cmd])
        return real(cmd, *args, **kwargs)

    monkeypatch.setattr(listener.subprocess, "run", spy)
    return calls


def _source_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    import shutil

    copy = tmp_path / "src"
    shutil.copytree(listener.java_source_dir(), copy)
    monkeypatch.setenv(listener.SRC_ENV, str(copy))
    assert listener.java_source_dir() == copy
    return copy


def _digest(src: Path) -> str:
    """The cache key's source hash, computed here as the docs describe it: every .java file's
    path and bytes, and the package version."""
    h = hashlib.sha256()
    for f in sorted(src.rglob("*.java")):
        h.update(f.relative_to(src).as_posix().encode() + b"\0" + f.read_bytes())
    h.update(__version__.encode())
    return h.hexdigest()[:16]


def test_a_failing_javac_is_a_listener_error_quoting_its_output_and_caches_no_jar(tmp_path, monkeypatch):
    calls = _javac_calls(tmp_path, monkeypatch)
    f = _source_copy(tmp_path, monkeypatch) / "io" / "sparkpredict" / "Row.java"
    f.write_text(f.read_text() + "\nclass Broken { int x = ; }\n")
    with pytest.raises(ListenerError) as info:
        listener.build_listener()
    assert len(calls) == 1
    head, _, said = info.value.message.partition("\n")
    assert head == "javac failed building the listener:"
    assert "Row.java" in said and "error:" in said  # the compiler's own words
    assert "fix the reported error" in info.value.fix
    assert not list((tmp_path / "cache" / "listener").glob("*.jar"))


def test_the_jar_is_keyed_by_version_spark_and_source_hash_built_once_and_again_for_edited_source(
        tmp_path, monkeypatch):
    calls = _javac_calls(tmp_path, monkeypatch)
    src = _source_copy(tmp_path, monkeypatch)
    spark = listener.spark_version()
    jar = listener.build_listener()
    assert jar == tmp_path / "cache" / "listener" / f"sparkpredict-listener-{__version__}-spark{spark}-{_digest(src)}.jar"
    with zipfile.ZipFile(jar) as z:
        names = set(z.namelist())
        manifest = z.read("META-INF/MANIFEST.MF").decode()
        props = z.read("io/sparkpredict/build.properties").decode()
    # every source file compiled into it, beside the manifest and the build stamp
    assert {f"io/sparkpredict/{f.stem}.class" for f in src.rglob("*.java")} <= names
    assert {"META-INF/MANIFEST.MF", "io/sparkpredict/build.properties"} <= names
    assert f"Source-Hash: {_digest(src)}\n" in manifest and f"Spark-Version: {spark}\n" in manifest
    assert props == f"sparkpredict_version={__version__}\nspark_version={spark}\nsource_hash={_digest(src)}\n"
    # compiled against the installed pyspark's jars, every source file given
    (cmd,) = calls
    assert cmd[cmd.index("-cp") + 1] == str(listener.pyspark_home() / "jars" / "*")
    assert sum(w.endswith(".java") for w in cmd) == len(list(src.rglob("*.java")))
    assert not [p for p in jar.parent.iterdir() if p != jar]  # no temporary file left beside it
    # cached: a second build compiles nothing; force compiles again, into the same name
    assert listener.build_listener() == jar and len(calls) == 1
    assert listener.build_listener(force=True) == jar and len(calls) == 2
    # an edited source is another jar; the first stays for whoever still runs it
    f = src / "io" / "sparkpredict" / "Row.java"
    f.write_text(f.read_text() + "\n// edited\n")
    second = listener.build_listener()
    assert len(calls) == 3 and second != jar and second.name.endswith(f"-{_digest(src)}.jar") and jar.is_file()


# ---- the JVM's file-name charset, and Spark Connect ------------------------------------------

@pytest.mark.skipif(os.uname().sysname == "Darwin", reason="the JDK names files in UTF-8 on macOS")
def test_the_jvm_path_encoding_follows_the_locale_as_the_jdk_does():
    enc = listener.jvm_path_encoding
    for plain in ({}, {"LC_ALL": "C"}, {"LC_ALL": "POSIX", "LANG": "en_US.UTF-8"}, {"LANG": ""}):
        assert enc(plain) == "ascii", plain
    # LC_ALL, else LC_CTYPE, else LANG; an empty one is not set
    assert enc({"LC_ALL": "", "LC_CTYPE": "de_DE.ISO-8859-1", "LANG": "en_US.UTF-8"}) == "iso8859-1"
    assert enc({"LANG": "de_DE.utf8@euro"}) == "utf-8"
    assert enc({"LANG": "en_US"}) is None and enc({"LANG": "en_US.NOPE-42"}) is None
    # what the refusal then says: a store the JVM would name otherwise, under C only
    with pytest.raises(Exception, match="another folder than Python"):
        listener.check_store_nameable("/data/ünï", enc({"LC_ALL": "C"}))
    listener.check_store_nameable("/data/ünï", enc({"LC_ALL": "C.UTF-8"}))
    listener.check_store_nameable("/data/plain", enc({"LC_ALL": "C"}))
    listener.check_store_nameable("/data/ünï", None)  # a charset that cannot be told: not refused
    listener.check_store_nameable("/data/ünï", "no-such-charset")


def test_a_connect_remote_is_refused_whatever_the_api_mode_says():
    remote = {"spark.remote": "sc://host:15002", "spark.master": "local[2]"}
    with pytest.raises(ListenerError, match="sc://host:15002"):
        listener._refuse_connect(remote)
    with pytest.raises(ListenerError, match="sc://host:15002"):
        listener._refuse_connect({**remote, "spark.api.mode": "connect"})
    # api.mode=connect alone runs a local Connect server on the master: recorded, no refusal
    listener._refuse_connect({"spark.api.mode": "Connect ", "spark.master": "local[2]"})
    with pytest.raises(ListenerError, match="sc://m:1"):
        listener._refuse_connect({"spark.api.mode": "connect", "spark.master": "sc://m:1"})


def test_the_executor_class_path_keeps_the_users_entries_then_adds_ours_once():
    sep = os.pathsep
    assert listener.merged_classpath(None, "/c/l.jar") == "/c/l.jar"
    assert listener.merged_classpath(f"/u/a.jar{sep}{sep}/c/l.jar", "/c/l.jar") == f"/u/a.jar{sep}/c/l.jar"
    assert listener.merged_classpath("/u/a.jar", f"/c/l.jar{sep}/u/a.jar") == f"/u/a.jar{sep}/c/l.jar"
    # spark.jars: a started JVM's file: URI of a jar is the jar (not added twice), other lists join
    assert listener.merged_list(" a.jar , ,file://localhost/c/l.jar", "/c/l.jar") == "a.jar,file://localhost/c/l.jar"
    assert listener.merged_list(None, "io.L") == "io.L"


def test_a_store_folder_of_tables_and_hidden_temporaries_is_no_foreign_folder(tmp_path):
    """A store the listener began (a table folder, no marker yet) with another writer's hidden
    temporary file beside it is still the store's folder; one ordinary file makes it foreign."""
    from sparkpredict.errors import StoreError
    from sparkpredict.store.schema import TABLES

    store = tmp_path / "store"
    (store / min(TABLES)).mkdir(parents=True)
    (store / ".part-0.parquet.tmp").write_text("x")
    assert listener.check_store(str(store)) is None
    (store / "notes.txt").write_text("x")
    with pytest.raises(StoreError, match=r"not a sparkpredict store: .*notes\.txt"):
        listener.check_store(str(store))


# ---- event logs ----------------------------------------------------------------------------

_LOGS = Path(__file__).parent / "data" / "eventlogs"


def test_peeking_at_a_logs_start_names_the_run_the_full_parse_stores(tmp_path):
    from sparkpredict.capture.eventlog import parse_event_log, peek_run_id
    from sparkpredict.capture.eventlog_files import LogSource, single_log

    for name in ("aqe_executors_killed_spark4.zstd", "rp_nosql_eventlog.json"):
        path = str(_LOGS / name)
        assert peek_run_id(single_log(path)) == parse_event_log(path).run_id
    # the start not among the first lines: unknown, not a guess
    late = tmp_path / "late.json"
    late.write_text('{"Event":"SparkListenerLogStart","Spark Version":"4.0.0"}\n' * 70
                    + (_LOGS / "rp_nosql_eventlog.json").read_text())
    assert peek_run_id(single_log(str(late))) is None
    assert peek_run_id(LogSource(path=str(tmp_path), files=[], in_progress=False, app_hint="x")) is None


def test_a_plain_logs_uncompressed_bytes_are_its_size_and_an_empty_in_progress_log_is_not_written_yet(tmp_path):
    from sparkpredict.capture.eventlog import NotWrittenYet, parse_event_log

    path = _LOGS / "rp_nosql_eventlog.json"
    parsed = parse_event_log(path)
    assert parsed.bytes_uncompressed == path.stat().st_size
    assert parsed.lines == len(path.read_bytes().splitlines())
    fresh = tmp_path / "app-20260101000000-0001.inprogress"
    fresh.write_bytes(b"")
    with pytest.raises(NotWrittenYet, match="has not written its first event yet"):
        parse_event_log(fresh)


# ---- a sweep's up-front checks ----------------------------------------------------------------

@pytest.fixture
def two_cores(monkeypatch):
    """A 2-core machine with 10,000 MiB available, as the sweep's checks see it."""
    from sparkpredict import sweep_plan as P

    monkeypatch.setattr(P.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(P, "_mem_available_mb", lambda: 10_000.0)
    return P


def test_a_local_sweep_may_start_four_task_slots_per_core_and_no_more(two_cores):
    from sparkpredict.errors import WorkloadError

    P = two_cores
    assert [P.most_local_executors(c) for c in (0, 1, 2, 3, 8, 9)] == [8, 8, 4, 2, 1, 0]
    P.check_capacity("local[8]", 8, 1, 1024)  # at the limit
    with pytest.raises(WorkloadError, match=r"local\[9\] asks for 9 task threads on a 2-core machine") as e:
        P.check_capacity("local[9]", 9, 1, 1024)
    assert e.value.fix == "use at most 8 executors with a local master"
    P.check_capacity("local[*]", 1, 1, 1024)
    P.check_capacity("local-cluster[4,2,1024]", 4, 2, 1024)
    with pytest.raises(WorkloadError) as e:
        P.check_capacity("local-cluster[5,2,1024]", 5, 2, 1024)
    assert e.value.message == ("local-cluster[5,2,1024] asks for 5 executors x 2 cores = 10 cores; this machine "
                               "has 2 and a local sweep may start at most 8")
    assert e.value.fix.startswith("use at most 4 executors here")


def test_a_local_cluster_needs_its_executors_memory_and_the_jvms_overhead(two_cores, monkeypatch):
    from sparkpredict.errors import WorkloadError

    P = two_cores
    P.check_capacity("local-cluster[1,1,1024]", 1, 1, 1024)  # a worker exactly the executor's size
    with pytest.raises(WorkloadError, match="gives each worker 1023 MiB, less than the executors' 1024 MiB"):
        P.check_capacity("local-cluster[1,1,1023]", 1, 1, 1024)
    exactly = 2 * (1024 + P.JVM_OVERHEAD_MB)
    monkeypatch.setattr(P, "_mem_available_mb", lambda: float(exactly))
    P.check_capacity("local-cluster[2,1,1024]", 2, 1, 1024)
    with pytest.raises(WorkloadError) as e:
        P.check_capacity("local-cluster[3,1,1024]", 3, 1, 1024)
    assert e.value.message == (f"local-cluster[3,1,1024] needs about {3 * (1024 + P.JVM_OVERHEAD_MB)} MiB for 3 "
                               f"executor JVMs; {exactly} MiB is available")
    assert e.value.fix.startswith("use at most 2 executors")


@pytest.mark.skipif(not Path("/proc/meminfo").is_file(), reason="Linux's /proc/meminfo")
def test_the_memory_available_is_read_from_meminfo_in_mib():
    from sparkpredict import sweep_plan as P

    def available_mib() -> float:
        (kb,) = [int(x.split()[1]) for x in Path("/proc/meminfo").read_text().splitlines()
                 if x.startswith("MemAvailable:")]
        return kb / 1024

    # the machine's memory moves between the reads (any other process allocating or freeing):
    # read before and after, within 64 MiB of what they span. Left in KiB, or read from another
    # line (MemFree, MemTotal), it lands far outside on a machine in use.
    before = available_mib()
    got = P._mem_available_mb()
    after = available_mib()
    assert min(before, after) - 64 < got < max(before, after) + 64, (before, got, after)


def test_a_sweep_needs_a_repeat_a_core_and_256_mib_per_executor():
    from sparkpredict import sweep_plan as P
    from sparkpredict.errors import InputError

    plan = P.plan_sweep("sort", "1MB", "1,2", repeats=1, master="local", executor_cores=1, executor_memory_mb=256)
    assert [(c.executors, c.repeat, c.master) for c in plan.combos] == [(1, 0, "local[1]"), (2, 0, "local[2]")]
    for bad in ({"repeats": 0}, {"executor_cores": 0}, {"executor_memory_mb": 255}):
        with pytest.raises(InputError):
            P.plan_sweep("sort", "1MB", "1", master="local", **bad)


def test_an_in_progress_log_without_its_start_is_dead_after_an_hour_unwritten(tmp_path):
    import time

    from sparkpredict.capture.eventlog import (
        DIED_BEFORE_START_S,
        NotWrittenYet,
        parse_event_log,
    )
    from sparkpredict.errors import IngestError

    log = tmp_path / "app-20260101000000-0002.inprogress"
    log.write_text('{"Event":"SparkListenerLogStart","Spark Version":"4.0.0"}\n')
    young = time.time() - DIED_BEFORE_START_S + 120
    os.utime(log, (young, young))
    with pytest.raises(NotWrittenYet, match="Spark has not written it yet"):
        parse_event_log(log)
    old = time.time() - DIED_BEFORE_START_S - 120
    os.utime(log, (old, old))
    with pytest.raises(IngestError, match="its application seems to have died before it started") as e:
        parse_event_log(log)
    assert not isinstance(e.value, NotWrittenYet) and f"rm {log}" in e.value.fix


def test_the_default_sweep_is_local_cluster_executors_of_one_core_and_1024_mib(two_cores):
    from sparkpredict.errors import WorkloadError

    P = two_cores
    plan = P.plan_sweep("sort", "1MB", "1,2")
    assert (plan.master_template, plan.executor_cores, plan.executor_memory_mb) == (P.DEFAULT_MASTER, 1, 1024)
    assert plan.job == "sort"  # the runs are recorded under the workload's name
    assert [c.master for c in plan.combos] == ["local-cluster[1,1,1024]", "local-cluster[2,1,1024]"]
    assert plan.combos[0].key("sort") == "sort|1000000|1|0|local-cluster[1,1,1024]|seed=0|cores=1|memory_mb=1024"
    with pytest.raises(WorkloadError, match=r"gives each worker 2 core\(s\) but --executor-cores is 1"):
        P.plan_sweep("sort", "1MB", "1", master="local-cluster[{executors},2,{memory_mb}]")
    P.plan_sweep("sort", "1MB", "1", master="local-cluster[{executors},2,{memory_mb}]", executor_cores=2)


def test_a_fixed_local_master_names_the_threads_it_runs_every_run_on(two_cores):
    from sparkpredict.errors import WorkloadError

    P = two_cores
    with pytest.raises(WorkloadError) as e:
        P.plan_sweep("sort", "1MB", "1,2", master="local[*]")
    assert e.value.message == ("--master 'local[*]' runs every run on as many task threads as the machine has "
                               "cores, so the runs at 1, 2 executor(s) would be recorded as setups they are not")
    assert e.value.fix.endswith("E task threads for E executors)")
    with pytest.raises(WorkloadError) as e:
        P.plan_sweep("sort", "1MB", "1,2,3", master="local[2]")
    assert "runs every run on 2 task thread(s), so the runs at 1, 3 executor(s)" in e.value.message
    assert e.value.fix.endswith(", or --executors 2")
    with pytest.raises(WorkloadError) as e:
        P.plan_sweep("sort", "1MB", "1,2", master="local-cluster[2,{cores},{memory_mb}]")
    assert "starts 2 executor(s) in every run, so the runs at 1 executor(s)" in e.value.message


def test_a_sweeps_too_long_list_of_counts_names_no_option_only_suggest_has():
    from sparkpredict import sweep_plan as P
    from sparkpredict.errors import InputError

    with pytest.raises(InputError, match="holds 20,000 counts") as e:
        P.plan_sweep("sort", "1MB", "1-20000", master="local")
    assert e.value.fix == "list fewer counts (e.g. 1,2,4,8,16,32)"


def test_a_machine_whose_cores_cannot_be_counted_is_taken_for_one_core(monkeypatch):
    from sparkpredict import sweep_plan as P
    from sparkpredict.errors import WorkloadError

    monkeypatch.setattr(P.os, "cpu_count", lambda: None)
    assert P.most_local_executors(1) == P.OVERSUBSCRIBE
    P.check_capacity(f"local[{P.OVERSUBSCRIBE}]", P.OVERSUBSCRIBE, 1, 1024)
    with pytest.raises(WorkloadError, match="task threads on a 1-core machine"):
        P.check_capacity(f"local[{P.OVERSUBSCRIBE + 1}]", P.OVERSUBSCRIBE + 1, 1, 1024)


def test_only_a_succeeded_run_of_the_workload_counts_as_done_for_a_resume(tmp_path):
    import json

    import pandas as pd

    from sparkpredict import sweep as S
    from sparkpredict.store import io as store_io

    key = "sort|1000000|1|0|local[1]|seed=0"
    rows = [("sort", "succeeded", {S.KEY_SWEEP: key}), ("sort", "failed", {S.KEY_SWEEP: key + "x"}),
            ("sort", "incomplete", {S.KEY_SWEEP: key + "y"}), ("wordcount", "succeeded", {S.KEY_SWEEP: key + "z"}),
            ("sort", "succeeded", None)]
    n = len(rows)
    store_io.open(tmp_path / "s", create=True).append({"runs": pd.DataFrame({
        "run_id": [f"r{i}" for i in range(n)], "app_id": [f"r{i}" for i in range(n)],
        "job": [r[0] for r in rows], "status": [r[1] for r in rows],
        "properties_json": [json.dumps(r[2]) if r[2] else "" for r in rows], "updated_ms": [1] * n})})
    assert S.recorded_keys(str(tmp_path / "s"), "sort", create=False) == {key}
