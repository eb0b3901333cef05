"""Rules at their boundaries, where the other tests checked values well inside them: each test
here failed on a one-operator change of the rule it pins (a mutation audit: deadline and budget
equal to the bound, the knee's threshold, the candidate grid's size, the executor limit, unit
rounding, the replay's interval, stage waves and split rules, refit reasons).
"""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_advise import GB, LawModel, advise

from sparkpredict import registry as R
from sparkpredict import retrain_plan as RP
from sparkpredict.advice import (
    budget_runtimes_s,
    candidate_table,
    context_lines,
    deadline_verdict,
    format_runtime,
)
from sparkpredict.advise import candidate_grid, knee_index
from sparkpredict.features.stages import count_rule, power_rule, query_slots
from sparkpredict.models.analytical import EQUATIONS
from sparkpredict.store import schema as S
from sparkpredict.units import (
    check_count_limit,
    format_bytes,
    format_bytes_in,
    parse_counts,
)

MB = 2**20

def test_U8_rounding_up_to_next_unit():
    assert format_bytes(999_999_999) == "1.00 GB"
    assert format_bytes_in(2**30 - 1, True) == "1.00 GiB"

def test_U11_max_executors_itself_allowed():
    assert parse_counts("1000000") == [1_000_000]
    check_count_limit(1_000_000)

def test_A1_A2_verdict_boundaries():
    assert deadline_verdict(False, 0.5, 100.0, 90.0) == "may miss"
    assert deadline_verdict(False, None, 60.0, 60.0) == "may miss"

def test_A5_knee_not_reached_vs_reached():
    a = advise(model=LawModel(c=0.0), max_executors=8)
    assert a.knee_executors == 8 and a.knee_reached is False
    assert context_lines(a)[0] == "knee: not reached up to 8 executors (more still pay off)"
    b = advise(model=LawModel(b=0.1))
    assert b.knee_executors == 8 and b.knee_reached is True
    assert context_lines(b)[0] == "knee: 8 executors (more stop paying off)"

def test_A6_notes_skip_distances_below_threshold():
    a = advise(input_bytes=200 * GB)  # 2x the largest size
    b = dataclasses.replace(a, extrapolation={"input_bytes": 1.0, "executors": 0.001})
    assert len(b.extrapolation_notes()) == 1

def test_A7_mixed_bounds():
    assert budget_runtimes_s([10.0, 20.0], [15.0, math.inf]) == [15.0, math.inf]

def test_A8_tiny_runtime():
    assert format_runtime(0.03) == format_runtime(0.068) == "<0.1s"  # 68ms beside <0.1s read as larger
    assert format_runtime(0.1) == "0.1s"

def test_A11_table_keeps_knee_row():
    a = advise(model=LawModel(b=0.1))
    assert a.knee_executors == 8 and len(a.candidates) == 32
    _, rows = candidate_table(a, max_rows=5)
    assert "8" in [r[1] for r in rows]

def test_V3_upper_equal_to_deadline_meets():
    six = next(c for c in advise().candidates if c.executors == 6)
    assert six.upper_s == 583.0
    a = advise(deadline_s=583.0)
    assert a.executors == 6 and a.meets_deadline is True

def test_V4_knee_efficiency_equal_is_not_below():
    assert knee_index([1, 2, 4], [8.0, 4.0, 2.0], 1.0) == 2

def test_V6_grid_of_exactly_256():
    assert candidate_grid(1, 256) == list(range(1, 257))

def test_V8_budget_caps_dynamic_max_at_choice():
    assert advise(model=LawModel(b=0.1)).dynamic_allocation == (1, 8)
    assert advise(model=LawModel(b=0.1), budget=1000.0).dynamic_allocation == (1, 1)

def test_V10_budget_equal_to_spend_fits():
    four = next(c for c in advise().candidates if c.executors == 4)  # upper 1.1*780 ~ 858 s
    a = advise(objective="time", budget=4 * four.upper_s / 3600)
    assert a.executors == 4 and a.warnings == ()

def test_V13_no_range_hint_at_the_cap():
    a = advise(model=LawModel(execs=(2, 600)), deadline_s=1)
    assert a.candidates[-1].executors == 1000 and a.executors == 1000
    assert not any("default end of the range" in w for w in a.warnings)

class ShrinkingSpread(LawModel):
    def predict_interval(self, X, confidence=0.9):
        t = self.predict(X); e = np.asarray(X["executors"], float)
        return {"predicted_runtime_s": t, "lower_s": t * 0.9, "upper_s": t * (1 + 1.0 / e)}

def test_V14_over_budget_time_picks_lowest_upper_spend():
    # spend_up(E) = (3000 + 30E)(1 + 1/E) = 3030 + 30E + 3000/E, least at E = 10
    assert advise(model=ShrinkingSpread(), objective="time", budget=0.001).executors == 10

def test_E2_formula_at_a_point():
    fn = EQUATIONS["fully_connected_c1"].fn
    assert fn(np.array([2.0]), np.array([4.0]), np.array([0.0, 1.0, 0.0]), 1)[0] == pytest.approx(12.0)

def test_S1_S2_weighted_r2():
    from sparkpredict.models.estimator import RuntimeEstimator
    class Fixed(RuntimeEstimator):
        def predict(self, X): return np.array([1.0, 2.0, 4.0])
    assert Fixed().score(None, [1.0, 2.0, 3.0], sample_weight=[1, 1, 2]) == pytest.approx(1 - 2 / 2.75)

def test_F3_slots_at_least_one_per_executor():
    assert query_slots(4, 2, 4) == 4.0

def test_F4_split_from_grown_runs_only():
    rule = count_rule([10 * MB, 20 * MB, 400 * MB, 800 * MB], [2, 2, 4, 8], 128 * MB)
    assert rule.split_bytes == 100 * MB and rule(1000 * MB) == 10

def test_F6_power_slope_capped_at_one():
    assert power_rule([1e6, 4e6], [1, 16])(16e6) == 32

def test_G4_450_mib_int():
    assert advise(executor_memory_mb=450).executor_memory_mb == 450

def test_P2_runs_changed_reason():
    fmt = R.runtime_model_format()
    state = ("fpA", R.ARTIFACT_VERSION, fmt, S.SCHEMA_VERSION, "auto", True)
    assert RP.refit_reason(state, "fpB", "auto", fmt) == "its runs changed"

HISTORY = Path(__file__).parent / "data" / "history"
A, B = "local-1795975988718", "local-1795976147659"  # sqljoin 4 MB @1, 32 MB @3

def _replay(ids, **kw):
    from sparkpredict.features.runs import runs_table
    from sparkpredict.models.replay import ReplayRuntimeModel
    r = runs_table(str(HISTORY))
    return ReplayRuntimeModel(store=str(HISTORY), **kw).fit(r[r.run_id.isin(ids)])

def _q(size, e):
    return pd.DataFrame({"job": ["sqljoin"], "input_bytes": [size], "executors": [e], "executor_cores": [1]})

def test_R4_reference_is_nearest_size_first():
    both, only_a = _replay([A, B], driver_trend=False), _replay([A], driver_trend=False)
    assert both.predict(_q(3999987.0, 3))[0] == pytest.approx(only_a.predict(_q(3999987.0, 3))[0])

def test_R2_few_runs_widen_ten_percent_per_size_doubling():
    m = _replay([A, B])
    i0, i1 = m.predict_interval(_q(31999986.0, 3)), m.predict_interval(_q(4 * 31999986.0, 3))
    w0 = i0["upper_s"][0] / i0["predicted_runtime_s"][0]
    w1 = i1["upper_s"][0] / i1["predicted_runtime_s"][0]
    assert w1 - w0 == pytest.approx(0.2)

def test_R1_lower_bound_never_below_five_percent():
    m = _replay([A, B])
    m._abs_rel = np.full(2, 3.0)
    i = m.predict_interval(_q(31999986.0, 3))
    assert i["lower_s"][0] == pytest.approx(0.05 * i["predicted_runtime_s"][0])

def test_F2_stage_table_waves_round_up():
    from sparkpredict import store
    from sparkpredict.features.stages import stage_table
    s = store.open(HISTORY); runs = s.read("runs")
    st = stage_table(runs[runs.run_id == B], s.read("stages"), s.read("tasks"))
    assert dict(zip(st.stage_id, st.waves)) == {0: 10, 1: 1, 4: 3, 8: 1}  # 30, 2, 8, 1 tasks on 3 slots

def test_M2_task_ratio_inclusive():
    from sparkpredict.monitor_baseline import _tasks_close
    assert _tasks_close(pd.Series([30.0, 31.0, 13.0]), 20.0).tolist() == [True, False, False]


def test_R5_replay_floor_is_five_percent_of_the_replayed_wall(monkeypatch):
    import sparkpredict.models.replay as replay_mod
    m = _replay([A, B])
    monkeypatch.setattr(replay_mod, "head_shift_s", lambda *a, **k: 0.0)
    wall = m.predict(_q(31999986.0, 3))[0]
    monkeypatch.setattr(replay_mod, "head_shift_s", lambda *a, **k: -1e12)  # a driver trend far below zero
    assert m.predict(_q(31999986.0, 3))[0] == pytest.approx(0.05 * wall)

def test_T1_stage_rate_is_per_mib_plus_one():
    from sparkpredict.models.stages import StageRuntimeModel
    t = pd.DataFrame({"bytes_in_per_task": [0.0, MB, 3 * MB], "task_ms": [10.0, 10.0, 10.0]})
    assert StageRuntimeModel(target="rate")._target(t).tolist() == [10.0, 5.0, 2.5]
    assert StageRuntimeModel(target="task_ms")._target(t).tolist() == [10.0, 10.0, 10.0]

def test_K1_input_stage_when_input_at_least_shuffle_read():
    from sparkpredict.features.stages import stage_table
    runs = pd.DataFrame([{"run_id": "r", "job": "j", "input_bytes": 8 * MB, "executors_max": 1,
                          "executor_cores": 1, "task_slots": 1, "properties_json": "{}"}])
    base = {"run_id": "r", "stage_attempt_id": 0, "num_tasks": 1, "submission_ms": 0,
            "parent_stage_ids_json": "[]", "executor_run_time_ms": 10, "num_task_rows": 1,
            "duration_ms": 10, "status": "succeeded"}
    stages = pd.DataFrame([{**base, "stage_id": i, "name": f"s{i} at q.py:{i}", "input_bytes": inp,
                            "shuffle_read_bytes": shuf}
                           for i, (inp, shuf) in enumerate([(MB, MB), (MB - 1, MB), (0, 0)])])
    t = stage_table(runs, stages).set_index("stage_id")
    assert t["is_input_stage"].tolist() == [1.0, 0.0, 0.0]

def test_H1_flat_beyond_sizes_from_one_and_a_half_times_the_largest():
    from test_prediction_limits import _flat_runs

    from sparkpredict.models.hybrid import JobRuntimeModel
    m = JobRuntimeModel().fit(_flat_runs())
    top = m.training_range_["input_bytes"][1]
    q = {"input_bytes": np.array([1.5 * top, 1.49 * top]), "executors": np.ones(2)}
    assert m.flat_beyond_sizes(q).tolist() == [True, False]
