"""The whole-job model (models/hybrid.py) and the one fitting function of both retrain paths
(fitting.py), at the points a second mutation audit found no test pinning: its load checks of a
damaged model file (``_floats``, ``_finite``) first, then a seeded shuffle of every other
one-operator change of the two modules, as many as the time allowed. Each test here failed on a
mutant the rest of the JVM-free suite let pass. Models with a known law come from ``law_model``
(an equation with set parameters), so expected values are worked out by hand; no JVM, no timings.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_mutation_gaps_hybrid import _raw
from test_mutation_gaps_intervals import GIB, law_model, q
from test_stage_models import MiB, make_run

# ---- load checks of a damaged model file (_floats, _finite) ----------------------------------


@pytest.mark.parametrize("field", ["residuals", "seen_residuals", "size_levels", "executor_levels"])
def test_one_null_among_a_saved_list_of_numbers_is_refused_at_load(field):
    """One null item is enough: the first of four was NaN, so the interval's quantiles (or the
    sizes the interval calls recorded) were NaN, not just those of a list of nulls."""
    with pytest.raises(ValueError, match=f"^{field} holds a null or NaN$"):
        law_model(**{field: [None, 0.0, 0.05, 0.1]})
    law_model(**{field: [0.0, 0.0, 0.05, 0.1]})  # the same list, all numbers, loads


# ---- growth beyond the sizes (SIZE_GROWTH "linear_pooled") -----------------------------------

def test_a_sub_second_job_pools_the_share_that_grows_as_a_longer_one_does():
    """The pooled share is read at every runtime above zero, not from one second up: 0.1 + 0.2·S/E
    (S in GiB) over 1-4 GiB at 2 and 8 executors grows by 0.4 of 0.5 s at 2 (share 0.8) and 0.1 of
    0.2 s at 8 (0.5), median 0.65; at 8 GiB and 8 executors the curve's own 0.3 s is below the
    pooled 0.2·(1 + 0.65·(8/4 - 1)) = 0.33 s. A share read as none below one second predicted
    0.3 s, and every count of a sub-second job grew only by its own curve."""
    m = law_model(theta=(0.2, 0.0, 0.1))
    assert m.predict(q([4.0, 4.0], [2.0, 8.0])) == pytest.approx([0.5, 0.2], rel=1e-6)
    assert m.predict(q([8.0, 8.0], [2.0, 8.0])) == pytest.approx([0.9, 0.33], rel=1e-6)


# ---- the fit --------------------------------------------------------------------------------

def test_random_state_none_draws_a_fresh_seed_for_each_fit(monkeypatch):
    """``random_state=None`` is scikit-learn's "a fresh seed per fit": the seed every candidate is
    scored with is drawn from [0, 2**31), so 20 fits get 20 seeds (two alike with chance
    190 / 2**31), not all below 2**20 (chance 2**-220). A range of one drew seed 0 every time,
    a fixed seed by another name; a range of 62 (2 * 31) repeated seeds within 20 fits."""
    from sparkpredict.models import selection
    from sparkpredict.models.hybrid import JobRuntimeModel

    seeds = []

    def recorded(*a, random_state, **k):
        seeds.append(random_state)
        raise RuntimeError("seed recorded")

    monkeypatch.setattr(selection, "select", recorded)
    runs = _raw().assign(runtime_s=lambda d: d["wall_ms"] / 1000, executors=lambda d: d["executors_requested"])
    for _ in range(20):
        with pytest.raises(RuntimeError, match="seed recorded"):
            JobRuntimeModel(random_state=None).fit(runs)
    assert len(set(seeds)) == 20 and all(0 <= s < 2**31 for s in seeds)
    assert max(seeds) >= 2**20


# ---- fitting.fit_stage_group -----------------------------------------------------------------

def test_a_stage_model_is_fitted_when_some_run_read_an_input_and_skipped_when_none_did():
    """The stage model of 6 runs (64-256 MiB, 1-2 executors) with stage and task rows is fitted:
    also when one of them read no input (the others still answer for a size); it is skipped
    (None) only without stage rows, or when no run read an input. Asked that some run had stage
    rows, or that every run read an input, a job with stages got no stage model."""
    from sparkpredict.fitting import fit_stage_group

    cells = [(64, 1), (64, 2), (128, 1), (128, 2), (256, 1), (256, 2)]
    tables = [make_run(k, mb * MiB, e)[0] for k, (mb, e) in enumerate(cells)]
    runs, stages, tasks = (pd.concat([t[n] for t in tables], ignore_index=True) for n in ("runs", "stages", "tasks"))
    meta = fit_stage_group(runs, stages, tasks)["meta"]
    assert (meta["fit_kind"], meta["n_runs"]) == ("stage", 6)
    assert meta["training_range"]["input_bytes"] == [64 * MiB, 256 * MiB]
    one_without = runs.assign(input_bytes=[0] + [mb * MiB for mb, _ in cells[1:]])
    meta = fit_stage_group(one_without, stages, tasks)["meta"]
    assert meta["n_runs"] == 6 and meta["training_range"]["input_bytes"] == [0, 256 * MiB]
    assert fit_stage_group(runs.assign(input_bytes=0), stages, tasks) is None
    assert fit_stage_group(runs, stages.iloc[:0], tasks) is None


def test_a_stage_model_of_one_run_or_of_runs_without_task_rows_is_fitted():
    """A job of one run with stage rows gets its stage model (the replay of that run's stages),
    and stage rows without task rows are the store's empty tasks table, not None: the job's name
    was read from a second row, and no task rows were measured by len(None); both died with a
    traceback, recorded by the retrain as the job's failure."""
    from sparkpredict.fitting import fit_stage_group

    tables = [make_run(k, mb * MiB, e)[0] for k, (mb, e) in enumerate([(64, 1), (64, 2), (128, 1), (128, 2)])]
    runs, stages = (pd.concat([t[n] for t in tables], ignore_index=True) for n in ("runs", "stages"))
    one = tables[0]
    doc = fit_stage_group(one["runs"], one["stages"], one["tasks"])
    assert doc["job"] == "etl" and doc["meta"]["n_runs"] == 1
    assert doc["meta"]["training_range"]["input_bytes"] == [64 * MiB, 64 * MiB]
    assert fit_stage_group(runs, stages, None)["meta"]["n_runs"] == 4


def test_no_rows_at_all_are_the_runs_of_no_job_not_a_traceback():
    """No rows (a job whose runs were all removed from the store) read as the store's empty table:
    the fit refuses them as the runs of 0 jobs, and the retrain records that as the job's failure.
    Given no frame to conform, the empty rows were None and the fit died on its sort."""
    from sparkpredict import fitting
    from sparkpredict.errors import InputError

    with pytest.raises(InputError, match="exactly one job, got 0"):
        fitting.fit_group(_raw().iloc[:0])
    ((job, _, status, _, error),) = fitting.fit_group_safe(_raw().iloc[:0])
    assert (job, status) == ("", "failed") and error.startswith("InputError: ")


def test_the_pooled_share_a_question_reuses_is_that_of_its_own_other_columns():
    """The share pooled beyond the sizes is kept per question's other columns (the advice asks
    each again for its bounds), not per its sizes and counts: a question's prediction does not
    depend on what was asked before it. Only a curve with trees reads the other columns (an
    equation does not, and a switch anchors its outer part at the box's edge); here a hybrid
    fitted to runs whose fixed cost is 30 s at 1 core and 2 s at 4. Kept by sizes and counts,
    4 cores asked after 1 were predicted with 1 core's share (12.0 s, not 12.8 s, at 8 GiB and
    8 executors), and 1 core after 4 with 4 cores' (72.9 s, not 65.4 s)."""
    from sparkpredict.models import selection

    cells = [(s, e, c) for s in (1, 2, 4) for e in (2, 8) for c in (1, 4)]
    F = {"input_bytes": np.array([s * GIB for s, _, _ in cells]), "executors": np.array([e for _, e, _ in cells], float),
         "executor_cores": np.array([c for _, _, c in cells], float), "executor_memory_mb": np.full(len(cells), 1024.0)}
    y = np.array([30 + 20 * s / e if c == 1 else 2 + 10 * s / e for s, e, c in cells])
    hybrid = selection.component_to_dict(selection.fit_component("hybrid", F, y, [], backbone="amdahl"))

    def model():
        return law_model(unrecorded=[], defaults={"executor_cores": 1.0, "executor_memory_mb": 1024.0},
                         component=hybrid, training_range={"input_bytes": [GIB, 4 * GIB], "executors": [2.0, 8.0],
                                                           "executor_cores": [1.0, 4.0]})

    at = q([8.0, 8.0, 16.0], [2.0, 8.0, 8.0])
    for first, then in ((1.0, 4.0), (4.0, 1.0)):
        fresh = model().predict(dict(at, executor_cores=np.full(3, then)))
        m = model()
        m.predict(dict(at, executor_cores=np.full(3, first)))
        np.testing.assert_array_equal(m.predict(dict(at, executor_cores=np.full(3, then))), fresh)


def test_a_fit_that_drops_runs_says_how_many_of_how_many(caplog):
    """Runs without a usable runtime are dropped with a warning that counts them (1 of 7 here), so
    that a model of fewer runs than recorded says why; the count is kept in ``dropped_runs_``."""
    from sparkpredict.models.hybrid import JobRuntimeModel

    runs = _raw(cells=((2, 1), (2, 2), (4, 1), (4, 2), (8, 1), (8, 2), (8, 4)))
    runs = runs.assign(runtime_s=runs["wall_ms"] / 1000, executors=runs["executors_requested"])
    runs.loc[6, "runtime_s"] = 0.0
    with caplog.at_level("WARNING", logger="sparkpredict.models.hybrid"):
        m = JobRuntimeModel(kind="amdahl").fit(runs)
    assert (m.n_runs_, m.dropped_runs_) == (6, 1)
    assert [r.getMessage().startswith("dropped 1 of 7 runs") for r in caplog.records] == [True]


# ---- persistence ----------------------------------------------------------------------------

def test_a_file_of_another_format_is_refused_and_a_change_of_regime_survives_a_round_trip():
    """A file that is not a job model is refused before any field is read; the newest runs'
    change of regime (``recent_shift_``) is kept through ``to_dict``/``from_dict`` as plain
    numbers, so that a saved model still warns of it."""
    from sparkpredict.errors import ModelError
    from sparkpredict.models.hybrid import JobRuntimeModel

    with pytest.raises(ModelError, match="not a sparkpredict job model"):
        law_model(format="sparkpredict-stage-model")
    shift = {"runs": 3, "earlier_runs": 9, "since_ms": 1_700_000_000_000, "previous_ms": 1_690_000_000_000,
             "runs_since": 3, "ratio": 1.5, "level": 0.9, "run_ids": ["a", "b", "c"]}
    m = law_model(recent_shift=dict(shift, runs=3.0, run_ids=("a", "b", "c")))
    assert m.recent_shift_ == shift and type(m.recent_shift_["runs"]) is int
    assert JobRuntimeModel.from_dict(m.to_dict()).recent_shift_ == shift


def test_a_resource_every_run_recorded_as_zero_is_unrecorded():
    """Zero cores is how a run without the value reads: a column of zeros is unrecorded (no
    range, no default, a value asked is not read), as a column of nulls is, not a range of 0-0."""
    from sparkpredict.models.hybrid import JobRuntimeModel

    runs = _raw().assign(runtime_s=lambda d: d["wall_ms"] / 1000, executors=lambda d: d["executors_requested"],
                         executor_cores=0)
    m = JobRuntimeModel(kind="amdahl").fit(runs)
    assert m.unrecorded_ == ["executor_cores"]
    assert "executor_cores" not in m.training_range_ and "executor_cores" not in m.defaults_
    assert m.training_range_["executor_memory_mb"] == (1024.0, 1024.0)


def test_flat_beyond_the_sizes_is_asked_from_one_and_a_half_times_the_largest():
    """10 + 0.04·S/2 (S in GiB, runs over 1-4 GiB) grows 0.8 % from 4 to 8 GiB at 2 executors:
    flat from 6 GiB (1.5x the largest) on, not at 5.9 GiB (1.475x), nor inside the sizes, where
    a smaller input is faster than the largest and says nothing of how a larger one costs more."""
    m = law_model(theta=(0.04, 0.0, 10.0))
    assert m.flat_beyond_sizes(q([2.0, 4.0, 5.9, 6.0, 8.0], 2.0)).tolist() == [False, False, False, True, True]


def test_a_fitted_models_repr_names_its_model_runs_and_error():
    from sparkpredict.models.hybrid import JobRuntimeModel

    assert repr(law_model()) == "JobRuntimeModel(name_='amdahl', n_runs_=19, cv_mape_=0.050)"
    assert repr(JobRuntimeModel(kind="gbm")) == "JobRuntimeModel(kind='gbm', random_state=0)"
