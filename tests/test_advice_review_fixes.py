"""Review fixes of ``sparkpredict suggest``, on real ingested event logs (no Spark).

1. A job with a single run has no finite upper bound: one run says nothing about how much
   the next run differs (the same generator app, logged 5 times, took 1.7 s to 9.7 s), so its
   replay certifies no deadline; 2+ runs keep their leave-one-out interval.
2. The memory warning names the smallest executor count that passes its own check.
3. A job whose only run is incomplete (or whose runs are all excluded) is told what its runs
   are and the fix that fits, by suggest, ``sparkpredict runs`` and the fit.
"""
from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from sparkpredict import ingest_event_logs, suggest_executors
from sparkpredict.errors import DegenerateDataError, UnknownJobError

DATA = Path(__file__).parent / "data"
LOGS = DATA / "eventlogs"
HISTORY = DATA / "history"
GEN = LOGS / "spark4"
# the same generator application, logged 5 times: 9.7 s, then 1.7-2.2 s
ZSTD = GEN / "local-1795969295677.zstd"
OTHERS = [GEN / "local-1795969305651.lz4", GEN / "local-1795969308180.snappy",
          GEN / "local-1795969310741.lzf", GEN / "local-1795969313432"]
# a Databricks log without SparkListenerApplicationEnd: stored as an incomplete run
CUT = LOGS / "nds_q88_photon_db_13_3.zstd"
CUT_RUN = "app-20240919162642-0000@1726763195840"


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def logs_store(tmp_path_factory):
    """'solo': the 9.7 s run alone; 'gen': the four others; 'Databricks Shell': one incomplete run."""
    path = tmp_path_factory.mktemp("ingested") / "s"
    for paths, job in ((OTHERS, "gen"), ([ZSTD], "solo"), ([CUT], None)):
        rep = ingest_event_logs(paths, path, job=job)
        assert rep.files_ingested == len(paths), rep.errors
    return path


@pytest.fixture
def own_store(logs_store, tmp_path):
    """A copy of ``logs_store`` a test may edit."""
    shutil.copytree(logs_store, tmp_path / "s")
    return tmp_path / "s"


def _replay(store, jobs):
    from sparkpredict.features.runs import runs_table
    from sparkpredict.models.replay import ReplayRuntimeModel

    runs = runs_table(store)
    return ReplayRuntimeModel(store=str(store)).fit(runs[runs["job"].isin(jobs)])


# ---- 1. a single run certifies no deadline ------------------------------------------------------
def test_a_single_runs_replay_has_no_finite_upper_bound(logs_store):
    m = _replay(logs_store, ["solo"])
    assert m.n_runs_ == 1 and m.cv_mape_ < 0.01  # it reproduces its run (the self-check) ...
    iv = m.predict_interval({"executors": np.array([1.0, 2.0, 4.0])}, 0.9)
    # ... which says nothing about the next run: any runtime is possible, not 9.7s-9.7s
    assert np.all(np.isinf(iv["upper_s"])) and np.all(iv["lower_s"] == 0)
    assert np.all(np.isfinite(iv["predicted_runtime_s"]))


def test_two_or_more_runs_keep_their_leave_one_out_interval(logs_store):
    m = _replay(logs_store, ["gen"])
    assert m.n_runs_ == 4 and len(m._abs_rel) == 4
    # the four ran on local[2] with no count set: 2 one-core executors, as the runs table reads
    # them (the replay had read 1, the driver-executor, so it widened the count they ran on)
    iv = m.predict_interval({"executors": np.array([2.0, 1.0])}, 0.9)
    q = float(np.quantile(m._abs_rel, 0.9))  # at a recorded count and size: no widening
    p = iv["predicted_runtime_s"][0]
    assert iv["upper_s"][0] == pytest.approx(p * (1 + q)) and iv["lower_s"][0] == pytest.approx(p * (1 - min(q, 0.95)))
    # one doubling below it: widened by one step
    from sparkpredict.models.replay import WIDEN_PER_EXECUTOR_DOUBLING

    p1 = iv["predicted_runtime_s"][1]
    assert iv["upper_s"][1] == pytest.approx(p1 * (1 + q + WIDEN_PER_EXECUTOR_DOUBLING))


def test_in_a_model_of_several_jobs_only_the_single_run_job_is_unbounded(logs_store):
    m = _replay(logs_store, ["gen", "solo"])
    assert m.n_runs_ == 5  # the other job's errors are no measure of this job's spread
    iv = m.predict_interval({"job": ["gen", "solo"], "executors": np.array([1.0, 1.0])}, 0.9)
    assert math.isfinite(iv["upper_s"][0]) and math.isinf(iv["upper_s"][1])


def test_a_single_run_never_meets_a_deadline_and_the_advice_says_why(logs_store):
    from sparkpredict.advice import format_runtime
    from sparkpredict.cli.suggest import format_advice

    a = suggest_executors("solo", "1MB", deadline_s="10s", store=logs_store)
    assert a.model_name == "replay" and a.n_runs == 1
    assert a.meets_deadline is False and not any(c.meets_deadline for c in a.candidates)
    # the run took 9.7 s: the cheapest count predicted within 10 s is given, uncertified
    in_time = [c for c in a.candidates if c.predicted_runtime_s <= 10]
    assert in_time and a.executors == min(in_time, key=lambda c: (c.cost_executor_hours, c.executors)).executors
    assert a.candidate_verdicts() == ["may miss" if c in in_time else "misses" for c in a.candidates]
    assert a.summary().startswith(
        f"solo as its runs ran (they recorded no input size, so 1 MB was not used): "
        f"{a.executors} executor{'s' * (a.executors > 1)}, "
        f"~{format_runtime(a.predicted_runtime_s)} (no 90% interval from 1 run), ")
    assert "; may miss deadline 10.0s: there is no 90% upper bound to certify it" in a.summary()
    (w,) = [w for w in a.warnings if "no deadline can be certified" in w]
    assert "one run says nothing about how much the runtime varies" in w and "Record more runs" in w
    assert not any("meets the deadline" in x or "interval reaches" in x for x in a.warnings), a.warnings
    text = format_advice(a)
    assert "inf" not in text and "meets" not in text and "none (1 run)" in text
    d = json.loads(json.dumps(a.to_dict(), allow_nan=False))  # null, never Infinity
    assert d["upper_s"] is None and d["meets_deadline"] is False
    assert all(c["upper_s"] is None and c["deadline_verdict"] != "meets" for c in d["candidates"])


def test_a_single_run_without_a_deadline_shows_no_interval(logs_store, capsys):
    from sparkpredict.cli import main

    assert main(["suggest", "--store", str(logs_store), "--job", "solo", "--input-size", "1MB"]) == 0
    out = capsys.readouterr().out
    assert "(no 90% interval from 1 run)" in out and "inf" not in out
    rows = re.findall(r"^>?\s+\d+\s+\S+\s+(.*?)\s{2,}\S+$", out, re.MULTILINE)
    assert rows and set(rows) == {"none (1 run)"}, out


def test_a_deadline_no_count_is_predicted_to_make_gets_the_fastest(logs_store):
    a = suggest_executors("solo", "1MB", deadline_s="5s", store=logs_store, max_executors=4)
    assert a.meets_deadline is False and a.candidate_verdicts() == ["misses"] * 4
    assert a.predicted_runtime_s == min(c.predicted_runtime_s for c in a.candidates)
    assert "; misses deadline 5.0s: predicted over it" in a.summary()


# ---- 2. the memory warning's count passes its own check ----------------------------------------
@pytest.fixture(scope="module")
def cluster_history(tmp_path_factory):
    """tests/data/history as if its runs had had a standalone cluster's master: executors of
    their own heap each (the recorded history ran local[N], whose threads share one)."""
    from sparkpredict.store import io as store_io

    src = store_io.open(HISTORY)
    dst = store_io.open(tmp_path_factory.mktemp("cluster") / "store", create=True)
    tables = {t: src.read(t, all_rows=True) if t == "runs" else src.read(t)
              for t in ("runs", "stages", "executors")}
    tables["runs"]["master"] = "spark://cluster:7077"
    # a standalone run records the executors it held (its count, standalone_masters), where
    # local[N] held one, the driver
    tables["runs"]["executors_max"] = tables["runs"]["executors_requested"]
    dst.append(tables)
    return dst.path


def _memory_warnings(size, counts, store):
    a = suggest_executors("sqljoin", size, store=store, executor_counts=counts)
    return [w for w in a.warnings if "bytes of input per byte of executor memory" in w]


@pytest.fixture
def on_cluster(cluster_history):
    """:func:`_memory_warnings` on the cluster history."""
    return lambda size, counts=None: _memory_warnings(size, counts, cluster_history)


def test_a_local_history_names_the_drivers_memory_not_more_executors():
    """local[N]'s executors are threads of one JVM: more of them add no memory."""
    a = suggest_executors("sqljoin", "64MB", store=HISTORY, executor_counts="1,3")
    assert not _memory_warnings("64MB", "1,3", HISTORY)
    said = [w for w in a.warnings if "local mode" in w]
    assert len(said) == 1, a.warnings
    assert said[0].startswith("the driver's 1024 MiB, which local mode's 1 executor shares (one JVM), "
                              "holds 0.06 bytes of input per byte, beyond the 0.03 that ran"), said[0]
    assert "spark.driver.memory (--driver-memory) of >= 2 GiB stays within what ran" in said[0]
    # the ratio does not fall with more threads: every candidate holds the same input per byte
    assert len({c.input_per_memory for c in a.candidates}) == 1
    assert not [w for w in suggest_executors("sqljoin", "32MB", store=HISTORY).warnings if "local mode" in w]


def test_the_memory_warning_names_the_smallest_count_that_passes(on_cluster):
    (w,) = on_cluster("64MB")
    # the largest run read 31,999,986 B: 2 executors hold 64 MB within the check's tolerance
    assert w.endswith("; >= 2 executors (or more executor memory) stay within what ran"), w
    assert on_cluster("64MB", "2") == []


@pytest.mark.parametrize("size", ["33MB", "64.1MB", "95.9MB", "96MB", "200MB"])
def test_the_named_count_is_quiet_and_one_fewer_is_warned(size, on_cluster):
    (w,) = on_cluster(size, "1")
    need = int(re.search(r">= (\d+) executors", w).group(1))
    assert on_cluster(size, str(need)) == []
    if need > 1:
        assert len(on_cluster(size, str(need - 1))) == 1


# ---- 3. what runs a job without a succeeded run has ---------------------------------------------
FRESH = "sparkpredict ingest LOG --store NEW_FOLDER"


def test_suggest_says_an_incomplete_run_is_incomplete_not_failed(logs_store):
    with pytest.raises(UnknownJobError) as e:
        suggest_executors("Databricks Shell", "50GB", store=logs_store)
    assert e.value.message.endswith("has no succeeded runs in store "
                                    f"{str(logs_store)!r}: 1 run is incomplete (its event log ended before "
                                    "the application did, as an in-progress or cut-off log does, or its "
                                    "listener missed events: Spark dropped them, or the listener failed "
                                    "on them)")
    assert "fail" not in e.value.fix
    assert e.value.fix.startswith(f"ingest the complete event log of run {CUT_RUN} (sparkpredict ingest LOG: it "
                                  "replaces a cut copy that ingest stored; a run whose listener missed events has "
                                  "no complete record: its error message says so)")
    assert e.value.fix.endswith("or record a run of the job that succeeds")


def test_runs_says_what_the_jobs_runs_are_and_not_to_check_its_name(logs_store, tmp_path, capsys):
    from sparkpredict.cli import main

    out = tmp_path / "x.csv"
    assert main(["runs", "--store", str(logs_store), "--job", "Databricks Shell", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "error: job 'Databricks Shell' has no succeeded runs in the store: 1 run is incomplete" in err
    assert f"fix: ingest the complete event log of run {CUT_RUN}" in err and "check the job name" not in err
    assert not out.exists()
    # a name the store does not hold at all is still a name to check
    assert main(["runs", "--store", str(logs_store), "--job", "Databricks shell", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no job(s) ['Databricks shell'] in the store" in err and "fix: check the job name" in err
    assert main(["runs", "--store", str(logs_store), "--job", "solo", "--out", str(out)]) == 0
    assert "wrote 1 run of 1 job to" in capsys.readouterr().out


def test_the_fit_of_an_incomplete_run_names_the_fresh_store(logs_store):
    from sparkpredict.fitting import fit_group
    from sparkpredict.store import io as store_io

    raw = store_io.open(logs_store).runs().query("job == 'Databricks Shell'")
    with pytest.raises(DegenerateDataError) as e:
        fit_group(raw)
    assert e.value.message == "no succeeded run (1 incomplete)"
    assert e.value.fix.startswith(f"ingest the complete event log of run {CUT_RUN} (sparkpredict ingest LOG")


def test_a_job_whose_runs_are_all_excluded_is_told_to_include_them(own_store):
    from sparkpredict.fitting import fit_group
    from sparkpredict.store import edit_runs
    from sparkpredict.store import io as store_io

    st = store_io.open(own_store)
    ids = sorted(st.runs().query("job == 'gen'")["run_id"])
    edit_runs(own_store, ids, excluded=True)
    raw = store_io.open(own_store).runs().query("job == 'gen'")
    with pytest.raises(DegenerateDataError) as e:
        fit_group(raw)
    assert e.value.message == "no succeeded run (4 excluded)"
    # four runs: the placeholder, and where to find them
    assert e.value.fix.startswith("include the runs to learn from again (sparkpredict store edit RUN_ID... "
                                  "--include; `sparkpredict store summary` lists the excluded runs)")
    # a single excluded run is named in the command
    edit_runs(own_store, [ids[0]], excluded=False)
    edit_runs(own_store, ["local-1795969295677"], excluded=True)  # solo's only run
    with pytest.raises(UnknownJobError) as u:
        suggest_executors("solo", "1MB", store=own_store)
    assert u.value.message.endswith(": 1 run is excluded from training")
    assert u.value.fix == ("include the runs to learn from again (sparkpredict store edit local-1795969295677 "
                           "--include); or record a run of the job that succeeds")


def test_mixed_statuses_are_each_told_with_their_fix():
    import pandas as pd

    from sparkpredict.fitting import no_succeeded_run

    what, fix = no_succeeded_run(pd.DataFrame({"run_id": ["a", "b", "c", "d"],
                                               "status": ["failed", "failed", "incomplete", "excluded"]}))
    assert what.startswith("2 runs failed, 1 is incomplete (its event log ended before the application did")
    assert what.endswith(", 1 is excluded from training")
    assert "store edit d --include" in fix and "event log of run c" in fix
    assert fix.endswith("fix what made its runs fail (`sparkpredict store summary` lists them), then record a "
                        "succeeded run: failed runs are no measure of the job's runtime")
    # a status this module has no words for is still said, and the fix still asks for a run
    what, fix = no_succeeded_run(pd.DataFrame({"run_id": ["x"], "status": ["weird"]}))
    assert (what, fix) == ("1 run has status 'weird'", "record a run of the job that succeeds")


def test_a_single_runs_budget_column_shows_the_cost_the_budget_was_judged_by(logs_store):
    """No count of a single run's replay has a finite bound, so the budget is judged by the
    predicted cost; the table's column said "none (1 run)" on every row, under the heading
    "at upper bound", beside a choice made on figures it did not show."""
    from sparkpredict.advice import candidate_table

    a = suggest_executors("solo", "1MB", objective="time", budget=0.008, store=logs_store)
    assert a.n_runs == 1 and not any(math.isfinite(c.upper_s) for c in a.candidates)
    cols, rows = candidate_table(a)
    at = cols.index("executor-h at prediction")
    assert "executor-h at upper bound" not in cols
    by_e = {int(r[1]): r for r in rows}
    for c in a.candidates:
        assert float(by_e[c.executors][at]) == pytest.approx(c.cost_executor_hours, rel=0.05)  # 2 digits
    fits = [c for c in a.candidates if c.cost_executor_hours <= 0.008]  # 1-3 executors
    assert len(fits) == 3 and float(by_e[a.executors][at]) <= 0.008
    assert a.executors == min(fits, key=lambda c: c.predicted_runtime_s).executors
