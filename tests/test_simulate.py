"""The scheduler replay: hand-built timelines with known answers, and real event logs."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sparkpredict.cli import main as cli_main
from sparkpredict.errors import InputError, ModelError
from sparkpredict.models.simulate import (
    Timeline,
    lower_bound_ms,
    replay,
    simulate_timeline,
)

# The committed copies of the shared logs (Apache-2.0, see NOTES.md there): a missing one fails.
EVENTLOGS = Path(__file__).resolve().parent / "data" / "eventlogs"


def tables(stages: list[dict], tasks: list[dict], *, start=0, end=None, executors=1, cores=2):
    """Store-schema tables of one run from short stage and task dicts (times in ms)."""
    runs = pd.DataFrame([{"run_id": "r", "job": "j", "start_ms": start, "end_ms": end,
                          "executors_max": executors, "executor_cores": cores,
                          "task_slots": executors * cores}])
    st = pd.DataFrame([{"run_id": "r", "stage_attempt_id": 0, "job_id": 0, "name": f"s{s['stage_id']}",
                        "parent_stage_ids_json": json.dumps(s.get("parents", [])), **s} for s in stages])
    tk = pd.DataFrame([{"run_id": "r", "stage_attempt_id": 0, "executor_id": "1",
                        "duration_ms": t["finish_ms"] - t["launch_ms"], **t} for t in tasks])
    return runs, st, tk


def waves_recording(n_tasks: int, task_ms: float, slots: int, t0: float = 0.0):
    """Tasks of one stage as an ideal scheduler with ``slots`` would have run them."""
    return [{"stage_id": 0, "launch_ms": t0 + (i // slots) * task_ms,
             "finish_ms": t0 + (i // slots + 1) * task_ms} for i in range(n_tasks)]


def test_eight_equal_tasks_on_two_slots_take_four_waves():
    tk = waves_recording(8, 100, 2)
    tl = Timeline.from_tables(*tables([{"stage_id": 0, "submission_ms": 0, "completion_ms": 400}], tk, end=400))
    assert tl.recorded_wall_ms == 400
    assert replay(tl, 1, 2).predicted_runtime_s == pytest.approx(0.4)   # 4 waves
    assert replay(tl, 2, 2).predicted_runtime_s == pytest.approx(0.2)   # 2 waves
    assert replay(tl, 4, 2).predicted_runtime_s == pytest.approx(0.1)   # 1 wave
    assert replay(tl, 8, 2).predicted_runtime_s == pytest.approx(0.1)   # a task cannot get shorter
    assert replay(tl, 3, 1).predicted_runtime_s == pytest.approx(0.3)   # ceil(8/3) = 3 waves


def test_self_check_is_exact_on_an_ideal_recording_and_reported_first():
    tk = waves_recording(8, 100, 2, t0=1000)  # 1 s of driver time before the stage
    runs, st, tkd = tables([{"stage_id": 0, "submission_ms": 1000, "completion_ms": 1400}], tk, end=1900)
    rep = simulate_timeline(Timeline.from_tables(runs, st, tkd), [2, 4])
    assert rep.actual_executors == 1 and rep.runtime_s == pytest.approx(1.9)
    assert rep.self_error == pytest.approx(0.0, abs=1e-12)
    # Head (1 s) and tail (0.5 s) driver time are kept: 2 executors = 4 slots = 2 waves.
    assert [p.predicted_runtime_s for p in rep.predictions] == pytest.approx([1.7, 1.6])


def test_dependencies_delay_children_and_independent_stages_overlap():
    # Stage 0: 4 x 100 ms; stage 1 (child of 0): 1 x 50 ms, submitted 10 ms after 0 ended;
    # stage 2: independent, submitted with stage 0, 2 x 100 ms. Recorded on 6 slots.
    stages = [{"stage_id": 0, "submission_ms": 0, "completion_ms": 100},
              {"stage_id": 2, "submission_ms": 0, "completion_ms": 100},
              {"stage_id": 1, "submission_ms": 110, "completion_ms": 160, "parents": [0]}]
    tk = ([{"stage_id": 0, "launch_ms": 0, "finish_ms": 100}] * 4
          + [{"stage_id": 2, "launch_ms": 0, "finish_ms": 100}] * 2
          + [{"stage_id": 1, "launch_ms": 110, "finish_ms": 160}])
    tl = Timeline.from_tables(*tables(stages, tk, end=160, executors=3, cores=2))
    out = np.zeros((tl.n_stages, 2))
    r = replay(tl, 1, 2, stage_times_out=out)  # 2 slots: stage 0 first (FIFO), then 2, then 1
    pos = {int(s): i for i, s in enumerate(tl.stage_ids)}
    assert out[pos[0]].tolist() == [0, 200]
    assert out[pos[2]].tolist() == [0, 300]       # overlaps: ready at 0, runs when slots free up
    # Stage 1 waits for its parent AND for stage 2, which had finished before it was submitted
    # in the recording (the driver waited for it), then the 10 ms of driver time.
    assert out[pos[1]].tolist() == [310, 360]
    assert r.predicted_runtime_s == pytest.approx(0.36)
    assert r.lower_bound_s <= r.predicted_runtime_s


def test_lower_bound_never_exceeds_prediction_on_random_timelines():
    rng = np.random.default_rng(7)
    for trial in range(30):
        n_st = int(rng.integers(1, 8))
        stages, tasks, t = [], [], 0.0
        for s in range(n_st):
            parents = [int(p) for p in rng.choice(s, size=min(s, int(rng.integers(0, 3))), replace=False)] if s else []
            n = int(rng.integers(1, 40))
            durs = rng.lognormal(4, 1, n)
            stages.append({"stage_id": s, "submission_ms": t, "completion_ms": t + durs.max(), "parents": parents})
            tasks += [{"stage_id": s, "launch_ms": t, "finish_ms": t + d} for d in durs]
            t += durs.max() * float(rng.uniform(0.2, 1.2))  # sometimes overlapping the next stage
        tl = Timeline.from_tables(*tables(stages, tasks, end=t + 5000, executors=4, cores=4))
        for e in (1, 2, 3, 5, 16):
            r = replay(tl, e, int(rng.integers(1, 5)))
            assert r.lower_bound_s <= r.predicted_runtime_s + 1e-9
            assert lower_bound_ms(tl, r.slots) / 1000 >= (tl.tail_ms + tl.task_duration_ms.max()) / 1000 - 1e-9


def test_resized_timeline_counts_more_waves():
    tl = Timeline.from_tables(*tables([{"stage_id": 0, "submission_ms": 0, "completion_ms": 400}],
                                      waves_recording(8, 100, 2), end=400))
    double = tl.resized([16], [1.0])
    assert double.n_tasks == 16
    assert replay(double, 1, 2).predicted_runtime_s == pytest.approx(0.8)
    slower = tl.resized([8], [1.5])
    assert replay(slower, 1, 2).predicted_runtime_s == pytest.approx(0.6)


def test_bad_inputs_raise_clear_errors():
    runs, st, tk = tables([{"stage_id": 0, "submission_ms": 0, "completion_ms": 400}], waves_recording(8, 100, 2))
    with pytest.raises(ModelError, match="no task rows") as e:
        Timeline.from_tables(runs, st, tk.iloc[0:0])
    assert "spark.sparkpredict.tasks" in e.value.fix
    tl = Timeline.from_tables(runs, st, tk)
    with pytest.raises(InputError, match="executors must be at least 1"):
        replay(tl, 0)


@pytest.fixture(scope="module")
def q72():
    path = EVENTLOGS / "nds_q72_dataproc_2_2.zstd"
    from sparkpredict.capture.eventlog import parse_event_log

    t = parse_event_log(path).tables
    return Timeline.from_tables(t["runs"], t["stages"], t["tasks"])


def test_real_event_log_replay_error_at_actual_executor_count(q72):
    # 8 executors x 16 cores, 13,504 tasks, 116.7 s on Dataproc (a real NDS query).
    assert (q72.executors, q72.cores, q72.n_tasks) == (8, 16, 13504)
    rep = simulate_timeline(q72, [1, 4, 16])
    assert abs(rep.self_error) <= 0.05
    one, four, sixteen = (p.predicted_runtime_s for p in rep.predictions)
    # Fewer slots cannot be faster than the replay at the actual count, nor than the lower bound.
    assert one > four > rep.self_check.predicted_runtime_s >= sixteen >= rep.predictions[2].lower_bound_s


def test_cli_prints_self_check_before_predictions(capsys):
    log = EVENTLOGS / "sparklens_local-1532512550423.json"
    assert cli_main(["simulate", str(log), "--executors", "1,2"]) == 0
    out = capsys.readouterr().out
    # local[*] on 4 cores: read as 4 one-core executors, as submit maps executors onto local[N]
    assert out.index("self-check at 4 executors (actually used)") < out.index("executors cores")
    assert cli_main(["simulate", str(log), "--executors", "0"]) == 2
    assert "executor counts must be at least 1" in capsys.readouterr().err
    assert cli_main(["simulate", str(log), "--executors", "2", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["actual_executors"] == 4 and abs(rep["self_error"]) < 0.05
    assert [p["executors"] for p in rep["predictions"]] == [2]
    assert cli_main(["simulate", "no-such-run", "--store", str(log.parent / "no-store")]) == 2
    assert "no sparkpredict store" in capsys.readouterr().err


def test_host_cores_models_executors_time_sharing_one_machine():
    # Recorded on 1 executor x 2 cores of a 2-core host: 8 x 100 ms = 4 waves.
    tl = Timeline.from_tables(*tables([{"stage_id": 0, "submission_ms": 0, "completion_ms": 400}],
                                      waves_recording(8, 100, 2), end=400))
    assert replay(tl, 4, 2).predicted_runtime_s == pytest.approx(0.1)                 # 8 real slots
    assert replay(tl, 4, 2, host_cores=2).predicted_runtime_s == pytest.approx(0.4)   # still 2 CPUs
    # A recording made on 4 slots sharing 2 CPUs had tasks twice as slow as alone.
    slow = Timeline.from_tables(*tables([{"stage_id": 0, "submission_ms": 0, "completion_ms": 400}],
                                        waves_recording(8, 200, 4), end=400, executors=2, cores=2))
    assert replay(slow, 1, 2, host_cores=2).predicted_runtime_s == pytest.approx(0.4)
    assert replay(slow, 1, 2).predicted_runtime_s == pytest.approx(0.8)


@pytest.mark.parametrize("name", ["tasks_executors_fail_compressed_eventlog.zstd",   # failed tasks, lost executors
                                  "eventlog_4nodes_8cores_dynamic_alloc.zstd",      # dynamic allocation
                                  "sparklens_local-1532512550423.json"])            # local mode, Spark 2.3
def test_other_real_logs_replay_within_five_percent_at_their_own_count(name):
    path = EVENTLOGS / name
    from sparkpredict.capture.eventlog import parse_event_log

    t = parse_event_log(path).tables
    rep = simulate_timeline(Timeline.from_tables(t["runs"], t["stages"], t["tasks"]), [1])
    assert abs(rep.self_error) <= 0.05, rep.self_error
    assert rep.predictions[0].lower_bound_s <= rep.predictions[0].predicted_runtime_s


def test_replay_of_every_recorded_sweep_run_matches_its_wall_time():
    from sparkpredict import store
    from sparkpredict.models.simulate import load_timeline

    path = Path(__file__).parent / "data" / "history"
    st = store.open(path)
    runs, stages, tasks = st.runs(), st.stages(), st.tasks()  # read once: the store has many files
    ok = runs.loc[runs["status"] == "succeeded", "run_id"]
    assert len(ok)
    for run_id in ok:
        rep = simulate_timeline(Timeline.from_tables(runs, stages, tasks, run_id), [])
        assert abs(rep.self_error) <= 0.05, (run_id, rep.self_error)
    # load_timeline (what the CLI uses) reads the same run from the store
    assert load_timeline(st, ok.iloc[0]).n_tasks == Timeline.from_tables(runs, stages, tasks, ok.iloc[0]).n_tasks
    # a local[3] sweep run (one driver-executor of 3 threads, instances=3) is the 3 executors the
    # sweep asked for, of one core each: replaying it at 2 executors means 2 slots, not 2 x 3
    loc = runs[(runs["master"] == "local[3]") & (runs["executors_requested"] == 3)]["run_id"].iloc[0]
    tl = load_timeline(st, loc)
    assert (tl.executors, tl.cores) == (3, 1)
    rep = simulate_timeline(tl, [2])
    assert rep.actual_executors == 3 and rep.predictions[0].slots == 2


def test_simulate_run_takes_run_id_first_and_checks_counts_before_reading():
    import sparkpredict
    from sparkpredict import store

    path = Path(__file__).parent / "data" / "history"
    runs = store.open(path).runs()
    run_id = runs.loc[runs["status"] == "succeeded", "run_id"].iloc[0]
    rep = sparkpredict.simulate_run(run_id, [1, 2], store=path)
    assert rep.run_id == run_id and [p.executors for p in rep.predictions] == [1, 2]
    assert sparkpredict.simulate_run(run_id, [], store=path).predictions == []  # the self-check alone
    for bad in ([0, 2], "1,2", [1.5], [True]):
        with pytest.raises(InputError, match="executor counts must be whole numbers") as e:
            sparkpredict.simulate_run(run_id, bad, store=path / "not-a-store")  # the store is never opened
        assert "--executors 1,2,4,8" in e.value.fix
    for kw, needle in (({"cores": 0}, "cores must be at least 1"), ({"host_cores": 0}, "host cores must be")):
        with pytest.raises(InputError, match=needle):
            sparkpredict.simulate_run(run_id, [2], store=path, **kw)


def test_slots_are_executors_times_cores_over_task_cpus(tmp_path, capsys):
    """tasks_executors_fail ran with spark.task.cpus=4 on 8 executors x 4 cores: 8 task slots
    (its recorded task_slots), not 32."""
    from sparkpredict.capture.eventlog import parse_event_log
    from sparkpredict.capture.eventlog_ingest import ingest_event_logs

    path = EVENTLOGS / "tasks_executors_fail_compressed_eventlog.zstd"
    t = parse_event_log(path).tables
    run = t["runs"].to_pandas()
    tl = Timeline.from_tables(run, t["stages"], t["tasks"])
    assert (tl.executors, tl.cores, tl.task_cpus) == (8, 4, 4) and run.task_slots.iloc[0] == 8
    rep = simulate_timeline(tl, [1, 8, 16])
    assert [p.slots for p in rep.predictions] == [1, 8, 16] and rep.self_check.slots == 8
    assert replay(tl, 8, 8).slots == 16 and replay(tl, 8, task_cpus=1).slots == 32
    # without the property (a listener row whose properties were not kept): from task_slots
    bare = Timeline.from_tables(run.assign(properties_json="{}"), t["stages"], t["tasks"])
    assert bare.task_cpus == 4
    ingest_event_logs(path, tmp_path / "st")
    assert cli_main(["simulate", "application_1603128018386_7846", "--executors", "1,2,4,8,16",
                     "--store", str(tmp_path / "st")]) == 0
    out = capsys.readouterr().out
    assert "8 executors at most (6.62 on average) x 4 cores (4 per task: spark.task.cpus)" in out
    row8 = next(ln for ln in out.splitlines() if ln.strip().startswith("8 ") and "<- used" in ln)
    assert row8.split()[:3] == ["8", "4", "8"]
    assert cli_main(["simulate", "application_1603128018386_7846", "--cores", "2",
                     "--store", str(tmp_path / "st")]) == 2
    assert "spark.task.cpus=4" in capsys.readouterr().err


def test_simulating_a_damaged_log_says_so(tmp_path, capsys):
    """A log cut off after 300 kB (of 1.2 MB) ends 39 s into a 116.7 s run: the replay's
    "recorded" is the part the log kept, and the report says the log was truncated."""
    src = EVENTLOGS / "nds_q72_dataproc_2_2.zstd"
    cut = tmp_path / src.name
    cut.write_bytes(src.read_bytes()[:300_000])
    assert cli_main(["simulate", str(cut), "--executors", "8"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("warning: nds_q72_dataproc_2_2.zstd: the zstd stream ends early")
    assert "no SparkListenerApplicationEnd" in out and "(incomplete: to its last event)" in out
    assert cli_main(["simulate", str(cut), "--executors", "8", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["status"] == "incomplete" and any("ends early" in w for w in rep["warnings"])


def test_a_stage_submitted_beside_another_waits_for_slots_not_for_the_driver():
    """Two scans submitted together (a join's): the second found slots free at its submission,
    then waited for the first's tasks. That wait was replayed as driver time, so more executors
    never shortened it (the replay 4.4 s at 10 slots against a true 4.2 s, and the floor above
    the truth)."""
    # 2 slots; scan 0: 6 x 200 ms, scan 1: 4 x 50 ms, both submitted at 0 (scan 0 first, FIFO);
    # scan 1's tasks launch at 600 ms, once scan 0's 3 waves are done
    stages = [{"stage_id": 0, "submission_ms": 0, "completion_ms": 600},
              {"stage_id": 1, "submission_ms": 0, "completion_ms": 700}]
    tk = waves_recording(6, 200, 2) + [dict(t, stage_id=1) for t in waves_recording(4, 50, 2, t0=600)]
    tl = Timeline.from_tables(*tables(stages, tk, end=700, executors=1, cores=2))
    assert replay(tl, 1, 2).predicted_runtime_s == pytest.approx(0.7)  # the recording itself
    # 5 slots: FIFO gives scan 0 all 5, then its 6th task and scan 1's 4 share the next wave:
    # 400 ms in all (the old reading waited 600 ms for scan 1 as driver time: 650 ms)
    fast = replay(tl, 5, 1)
    assert fast.predicted_runtime_s == pytest.approx(0.4)
    assert fast.lower_bound_s <= 0.4 + 1e-9
    # 10 slots: every task at once; the run is its longest task
    assert replay(tl, 10, 1).predicted_runtime_s == pytest.approx(0.2)
