"""A job recorded once still gets advice: the advisor falls back to replaying its tasks."""
from pathlib import Path

import pyarrow.compute as pc
import pytest

from sparkpredict import store, suggest_executors

HISTORY = Path(__file__).parent / "data" / "history"


@pytest.fixture
def one_run_store(tmp_path):
    src = store.open(HISTORY)
    runs = src.read("runs", form="arrow")
    runs = runs.filter(pc.equal(runs["job"], "sqljoin"))
    # the run at 2 executors and the largest size: one run, one executor count
    df = runs.to_pandas()
    pick = df[(df.executors_requested == 2)].sort_values("input_bytes").iloc[-1].run_id
    tables = {name: src.read(name, form="arrow", run_ids=[pick])
              for name in ("executors", "stages", "tasks", "runs")}
    dst = store.open(tmp_path / "one", create=True)
    dst.append(tables)
    return dst.path, df[df.run_id == pick].iloc[0]


def test_single_run_gets_advice_from_the_replay(one_run_store):
    path, run = one_run_store
    advice = suggest_executors("sqljoin", int(run.input_bytes), store=path, objective="time",
                               max_executors=4)
    assert advice.model_name == "replay"
    by_e = {c.executors: c for c in advice.candidates}
    # At the recorded count the replay reproduces the recorded wall time (its self-check).
    assert by_e[2].predicted_runtime_s == pytest.approx(run.wall_ms / 1000, rel=0.05)
    assert all(c.lower_s <= c.predicted_runtime_s <= c.upper_s for c in advice.candidates)
    assert any("runs" in w for w in advice.warnings)  # too few runs is said


def test_a_single_runs_error_is_called_its_self_check(one_run_store):
    """One run cannot be cross-validated: the replay's error is that run replayed at its own
    executor count against its recorded wall time, and the advice names it so, in good English."""
    from sparkpredict.advice_source import HistorySource
    from sparkpredict.cli.suggest import format_advice

    path, run = one_run_store
    advice = suggest_executors("sqljoin", int(run.input_bytes), store=path, max_executors=4)
    model = HistorySource.resolve("sqljoin", store=path).model
    assert advice.model_cv_mape == pytest.approx(abs(model.self_errors_[run.run_id]))
    text = format_advice(advice)
    assert f"model replay (replay self-check error {advice.model_cv_mape:.1%}, 1 run)" in text, text
    assert "CV MAPE" not in text
    assert "warning: only 1 run of sqljoin in the history" in text
    assert "warning: every run of sqljoin used 2 executors" in text
    assert not any("cross-validated" in w for w in advice.warnings)


def test_stage_forest_serves_the_advisor():
    from sparkpredict.features.runs import runs_table
    from sparkpredict.models.stages import StageRuntimeModel

    runs = runs_table(HISTORY)
    model = StageRuntimeModel(store=str(HISTORY)).fit(runs[runs.job == "sort"])
    advice = suggest_executors("sort", "64MB", models={"sort": model}, store=HISTORY,
                               objective="time", max_executors=6)
    assert advice.model_name.startswith("stage-forest")
    assert advice.extrapolates  # 64 MB is twice the largest size recorded
    times = [c.predicted_runtime_s for c in advice.candidates]
    assert advice.predicted_runtime_s <= min(times) * 1.02  # the fastest, or one within 2 % of it


def test_a_single_runs_budget_is_judged_by_the_predicted_cost(one_run_store):
    """No count has a finite upper bound from one run: judged by it, every count would be over
    any budget; the budget is then judged by the predicted cost (what the replay can say)."""
    path, run = one_run_store
    free = suggest_executors("sqljoin", int(run.input_bytes), store=path, objective="time", max_executors=4)
    by_e = {c.executors: c for c in free.candidates}
    assert all(c.upper_s == float("inf") for c in free.candidates)
    # a budget that the predicted cost of 1 and 2 executors fits, and not that of 3 or 4
    costs = sorted((c.cost_executor_hours, c.executors) for c in free.candidates)
    fits = [e for c, e in costs if c <= by_e[2].cost_executor_hours * 1.0001]
    budget = by_e[2].cost_executor_hours * 1.0001
    a = suggest_executors("sqljoin", int(run.input_bytes), store=path, objective="time", max_executors=4,
                          budget=budget)
    within = [c for c in a.candidates if c.cost_executor_hours <= budget]
    assert a.executors in fits and a.executors in {c.executors for c in within}
    assert not any("budget" in w for w in a.warnings)
