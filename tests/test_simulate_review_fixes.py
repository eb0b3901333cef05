"""Stop 36's review of simulate, the replay, the report and stage-level evaluation found these;
each test failed before its fix."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sparkpredict.cli import main

DATA = Path(__file__).parent / "data"
HISTORY = DATA / "history"
SPARKLENS = DATA / "eventlogs" / "sparklens_local-1532512550423.json"


def test_simulate_of_a_log_cut_while_its_first_stage_ran(tmp_path, capsys):
    # a traceback: "'stage_id' is both an index level and a column label" (no stage row yet)
    cut = tmp_path / "first-stage-running.json.inprogress"
    cut.write_text("".join(SPARKLENS.read_text().splitlines(keepends=True)[:15]))
    assert main(["simulate", str(cut), "--executors", "1,4", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["n_stages"] == 1 and rep["n_tasks"] == 4 and rep["status"] == "incomplete"
    assert abs(rep["self_error"]) < 0.01
    by = {p["executors"]: p["predicted_runtime_s"] for p in rep["predictions"]}
    assert by[1] >= by[4] > 0


def test_simulate_of_a_run_that_ran_no_stage_is_its_driver_time(tmp_path, capsys):
    # "has no task rows ... fix: ingest its event log", of an event log
    events = [json.loads(line) for line in SPARKLENS.read_text().splitlines()]
    log = tmp_path / "nostages.json"
    log.write_text("".join(json.dumps(e) + "\n" for e in events
                           if not any(k in e["Event"] for k in ("Task", "Stage", "Job"))))
    assert main(["simulate", str(log), "--executors", "1,2,4"]) == 0
    out = capsys.readouterr().out
    assert "warning: the run ran no stage: its runtime is driver time alone" in out
    assert "0 tasks in 0 stages, recorded 16.0s" in out
    assert out.count("16.0s        16.0s") == 3


def test_simulate_counts_are_sorted_and_distinct_and_the_list_fix_is_its_own(capsys):
    events = SPARKLENS
    assert main(["simulate", str(events), "--executors", "4,4,1"]) == 0
    out = capsys.readouterr().out
    rows = [line.split()[0] for line in out.splitlines() if line.strip().endswith(("%", "<- used"))
            and line.split()[0].isdigit()]
    assert rows == ["1", "4"] and out.count("<- used") == 1
    assert main(["simulate", str(events), "--executors", "1-5000,6000-12000"]) == 2
    fix = capsys.readouterr().err.strip().splitlines()[-1]
    assert fix.startswith("fix: list fewer counts") and "--min-executors" not in fix


def test_the_replays_driver_trend_stays_within_the_recorded_counts():
    from sparkpredict.features.runs import runs_table
    from sparkpredict.models.replay import ReplayRuntimeModel, head_shift_s

    # the line as measured between the counts, flat beyond them
    assert head_shift_s(13.0, 3, 1, (1, 3)) == pytest.approx(0.026)
    assert head_shift_s(13.0, 1000, 1, (1, 3)) == pytest.approx(0.026)
    assert head_shift_s(13.0, 1000, 3, (1, 3)) == 0.0
    runs = runs_table(str(HISTORY))
    wc = runs[runs["job"] == "wordcount"]
    m = ReplayRuntimeModel(store=str(HISTORY)).fit(wc)
    assert m.head_slope_ms_.get("wordcount", 0.0) != 0.0  # the trend is there to be clamped
    X = pd.DataFrame({"job": "wordcount", "input_bytes": float(wc["input_bytes"].median()),
                      "executors": [16, 256, 1000]})
    p = m.predict(X)
    # beyond the runs' counts the replay's slots no longer shorten anything: one prediction
    assert np.ptp(p) < 1e-9, p


def _with_host_samples(store: Path, master: str, cpu_count) -> str:
    """Appends two driver host samples of ``cpu_count`` CPUs (None: unread) to the first run of
    ``master`` in ``store``; returns that run's id."""
    from sparkpredict.store import io as store_io

    st = store_io.open(str(store))
    runs = st.read("runs")
    run = runs[runs["master"] == master].iloc[[0]]
    run_id = str(run["run_id"].iloc[0])
    samples = pd.DataFrame({"run_id": [run_id] * 2, "executor_id": "driver", "host": "h1",
                            "time_ms": [1, 2], "cpu_count": pd.array([cpu_count] * 2, dtype="Int64")})
    st.append({"runs": run, "host_samples": samples})
    return run_id


def test_simulate_warns_of_a_run_with_more_slots_than_its_hosts_cpus(tmp_path, capsys):
    store = tmp_path / "store"
    shutil.copytree(HISTORY, store)
    run_id = _with_host_samples(store, "local[3]", 2)
    assert main(["simulate", "--store", str(store), run_id, "--executors", "1,3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("warning: the run had 3 task slots of 1 core on one host of 2 CPUs")
    assert "--host-cores 2 replays every count" in out
    # told what to do, it is quiet
    assert main(["simulate", "--store", str(store), run_id, "--executors", "1,3", "--host-cores", "2"]) == 0
    assert "warning" not in capsys.readouterr().out
    # a run within its host's CPUs says nothing
    one = _with_host_samples(store, "local[1]", 2)
    assert main(["simulate", "--store", str(store), one, "--executors", "1"]) == 0
    assert "warning" not in capsys.readouterr().out


def test_simulate_reads_past_host_samples_without_a_cpu_count(tmp_path, capsys):
    # ValueError: cannot convert float NaN to integer (found by the review of stop 36's diff)
    store = tmp_path / "store"
    shutil.copytree(HISTORY, store)
    run_id = _with_host_samples(store, "local[3]", None)
    assert main(["simulate", "--store", str(store), run_id, "--executors", "1,3"]) == 0
    assert "warning" not in capsys.readouterr().out


def test_host_cores_count_a_task_of_several_cpus_as_that_many_cores():
    from sparkpredict.capture.eventlog import parse_event_log
    from sparkpredict.models.simulate import Timeline, replay

    t = parse_event_log(SPARKLENS).tables
    tl = Timeline.from_tables(t["runs"], t["stages"], t["tasks"])
    assert tl.task_cpus == 1 and tl.executors * tl.cores == 4
    # tasks of 2 cores on executors of 4: 2 slots an executor, but 4 host cores run 2 such tasks
    # at once (it ran 4, 8 cores' worth on 4). The recording's 4 one-core slots on 4 host cores
    # had nothing to undo: as 2 slots without a host limit.
    wide = replay(tl, 4, 4, task_cpus=2, host_cores=4)
    two_slots = replay(tl, 1, 2, task_cpus=1, host_cores=None)
    assert wide.predicted_runtime_s == pytest.approx(two_slots.predicted_runtime_s, rel=1e-9)
    assert replay(tl, 4, 4, task_cpus=2).predicted_runtime_s < wide.predicted_runtime_s


def test_evaluate_scores_one_stage_level_model_by_its_name(tmp_path, capsys):
    from sparkpredict.features.runs import runs_table

    runs_table(str(HISTORY)).to_csv(tmp_path / "runs.csv", index=False)
    # "unknown model kind(s) 'stage-forest'": only --stage-models, both at once, could score them
    assert main(["evaluate", str(tmp_path / "runs.csv"), "--store", str(HISTORY), "--models", "replay",
                 "--split", "cv3", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {r["model"] for r in doc["rows"]} == {"replay"}
    assert main(["evaluate", str(tmp_path / "runs.csv"), "--models", "bogus"]) == 2
    assert "stage-forest, replay" in capsys.readouterr().err


def test_the_reports_stage_figure_gives_the_runs_tables_executor_count(tmp_path, figure_titles):
    # "1 executors" for a local[*] run of 4 (the raw row's request), where every table said 4
    from sparkpredict.capture.eventlog_ingest import ingest_event_logs
    from sparkpredict.report import build_report

    store = tmp_path / "store"
    ingest_event_logs([SPARKLENS], store, job="x")
    build_report(str(tmp_path / "r.html"), str(store))
    stage_titles = [t for t in figure_titles if t.startswith("stages of the latest run")]
    assert stage_titles and "(size unknown, 4 executors, 16.0s)" in stage_titles[0], stage_titles
