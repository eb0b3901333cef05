"""The whole-job model (models/hybrid.py) at the points a fourth mutation audit found no test
pinning: each test here failed on a one-operator change of the module that the rest of the
JVM-free suite let pass. Expected values are worked out by hand; no JVM, no timings.
"""
from __future__ import annotations

import numpy as np
import pytest
from test_mutation_gaps_intervals import GIB, law_model

from sparkpredict.errors import NotFittedError
from sparkpredict.models.hybrid import JobRuntimeModel, _pooled_share

# ---- the share of the runtime that grows, pooled over the counts (_pooled_share) ---------------


@pytest.mark.parametrize("at_four", [0.0, np.inf], ids=["zero", "infinite"])
def test_a_count_whose_curve_has_no_finite_positive_runtime_at_the_largest_size_grows_by_no_share(at_four):
    """A count whose curve at the largest size is 0 (no runtime to grow) or infinite (a share
    of inf/inf) counts as a share of 0 in the median (mutants: a share of 1, for either).
    ``1 + 3·(S - 1)/E`` at size 5 grows by 12 of 13 s at 1 executor and 6 of 7 at 2; at 4
    executors the curve is ``at_four``: the median of 12/13, 6/7, 0 is 6/7 (the mutants' 12/13)."""

    def curve(G):
        with np.errstate(invalid="ignore"):
            return np.where(G["executors"] < 4, 1 + 3 * (G["input_bytes"] - 1) / G["executors"], at_four)

    F = {"input_bytes": np.array([10.0]), "executors": np.array([1.0])}
    np.testing.assert_allclose(_pooled_share(curve, F, 5.0, np.array([1.0, 2.0, 4.0])), [6 / 7], rtol=1e-12)


def test_the_cache_of_pooled_shares_holds_at_most_64_questions():
    """Each question beyond the sizes with other columns of its own keeps its pooled share;
    the 65th clears the cache (mutant: the clear dropped, a cache that grows with every
    distinct question a long-lived model is asked)."""
    m = law_model(unrecorded=[], defaults={"executor_cores": 1.0, "executor_memory_mb": 1024.0})
    for cores in range(1, 66):
        m.predict({"input_bytes": [8 * GIB], "executors": [2.0], "executor_cores": [float(cores)]})
        assert len(m._share_cache) == (cores - 1) % 64 + 1



def test_a_question_asked_again_reuses_its_pooled_share(monkeypatch):
    """The pooled share of a question beyond the sizes is worked out once and read back for the
    same question, its interval and its advice (mutant: the cache never read, the median over
    the counts worked out again at each prediction)."""
    from sparkpredict.models import hybrid

    pooled = []
    real = hybrid._pooled_share

    def counted(*a):
        pooled.append(len(a[3]))  # the runs' executor counts it pools over
        return real(*a)

    monkeypatch.setattr(hybrid, "_pooled_share", counted)
    m = law_model()
    beyond = {"input_bytes": [8 * GIB], "executors": [4.0]}
    assert m.predict(beyond).tolist() == m.predict(beyond).tolist()
    assert pooled == [2]

def test_the_pooled_share_is_computed_only_for_the_pooled_rule_beyond_the_sizes():
    """A question within the sizes, or beyond them for a model saved with another growth rule,
    pools no share (mutant: each ``and`` of the condition an ``or``, a share computed and kept
    for every question)."""
    inside = {"input_bytes": [2 * GIB], "executors": [4.0]}
    m = law_model()
    m.predict(inside)
    assert getattr(m, "_share_cache", {}) == {}
    m = law_model(size_growth="linear")
    np.testing.assert_allclose(m.predict({"input_bytes": [8 * GIB], "executors": [4.0]}), [20.0 * 8 / 4 + 10.0])
    assert getattr(m, "_share_cache", {}) == {}


# ---- how far a question lies beyond the runs (extrapolation) ---------------------------------

def test_an_extra_column_asked_at_its_largest_value_lies_inside_the_range_even_at_or_below_zero():
    """A job's own numeric column may be 0 or negative in every run (no positivity asked of
    extras). Asked at the largest value the runs had, the question is inside the range, 0
    beyond, not infinitely (mutant: ``v >= hi`` read as above the range, ``v / 0 - 1``); a
    value above a largest value of 0 or less is as far beyond as a float goes, and one above a
    largest value between 0 and 1 is ``v / hi - 1`` beyond (mutant: ``hi > 1`` asked, as far
    as a float goes)."""
    gib = {"input_bytes": [GIB, 4 * GIB], "executors": [2.0, 8.0]}
    for lo, hi, beyond in ((-2.0, 0.0, np.finfo(float).max), (-2.0, -1.0, np.finfo(float).max), (0.25, 0.5, 2.0)):
        m = law_model(extras=["p"], defaults={"p": lo}, training_range={**gib, "p": [lo, hi]})
        got = m.extrapolation({"input_bytes": [2 * GIB] * 2, "executors": [4.0] * 2, "p": [hi, hi + 1]})
        assert got["p"].tolist() == [0.0, beyond]
        assert got["max"].tolist() == got["p"].tolist()

# ---- the prediction below the counts (_below_counts_prediction) -----------------------------

def count_curve_calls(monkeypatch, m) -> list[int]:
    """The rows of each evaluation of ``m``'s curve from now on (a list filled as it is read)."""
    calls: list[int] = []
    real = m._curve

    def counted(F):
        calls.append(len(F["executors"]))
        return real(F)

    monkeypatch.setattr(m, "_curve", counted)
    return calls


def test_a_question_within_the_counts_evaluates_the_curve_once(monkeypatch):
    """No row asks for fewer executors than the runs had: the hedge below the counts reads
    nothing more (mutant: its early return dropped, a second evaluation of the curve on no rows
    per prediction, which suggest makes several times per candidate)."""
    m = law_model()
    calls = count_curve_calls(monkeypatch, m)
    np.testing.assert_allclose(m.predict({"input_bytes": [2 * GIB], "executors": [4.0]}), [20.0 * 2 / 4 + 10.0])
    assert calls == [1]


def test_an_unfitted_model_asked_a_chance_says_to_fit_it_before_reading_the_limit():
    """An unfitted model is refused as such whatever limit it is asked about (mutant:
    ``chance_within``'s own check dropped, a malformed limit then refused first, as if the
    limit were all that was wrong)."""
    with pytest.raises(NotFittedError):
        JobRuntimeModel().chance_within({"input_bytes": [GIB], "executors": [2.0]}, "soon")


# ---- fitting ---------------------------------------------------------------------------------

def test_a_fit_left_with_just_enough_runs_still_says_it_dropped_some(caplog):
    """5 runs, one without a runtime: the 4 left (MIN_RUNS, just enough to fit) make a model, and
    the fit says it dropped one of 5 (mutant: the warning only with more than MIN_RUNS left, a
    model of fewer runs than recorded that does not say why)."""
    from test_mutation_gaps_intervals import _exact_runs

    runs = _exact_runs(sizes=(1, 2), counts=(2, 4))
    runs.loc[len(runs)] = [3 * GIB, 4.0, 0.0]
    with caplog.at_level("WARNING", logger="sparkpredict.models.hybrid"):
        m = JobRuntimeModel(kind="amdahl").fit(runs)
    assert (m.n_runs_, m.dropped_runs_) == (4, 1)
    assert [r.getMessage().startswith("dropped 1 of 5 runs") for r in caplog.records] == [True]


# ---- the flat sizes' check (_flat_rows) --------------------------------------------------------

def test_a_question_below_one_and_a_half_times_the_largest_size_is_not_flat_without_reading_the_curve(monkeypatch):
    """Only a question at least 1.5x the largest size can be flat beyond the sizes; one short of
    it is answered False with no evaluation of the curve (mutant: the early return dropped, the
    curve read three times for an answer known before)."""
    m = law_model()
    calls = []
    monkeypatch.setattr(m, "_curve", lambda F: calls.append(1))
    assert m.flat_beyond_sizes({"input_bytes": [5.9 * GIB], "executors": [4.0]}).tolist() == [False]
    assert calls == []


def test_runs_of_several_jobs_are_refused_naming_the_first_five():
    """Runs of 6 jobs given to one model: the refusal counts them and names the first five in
    order (mutant: six named), with the fix of one model per job."""
    from sparkpredict.errors import InputError

    runs = {"input_bytes": [GIB] * 6, "executors": [2.0] * 6, "runtime_s": [10.0] * 6, "job": list("fedcba")}
    with pytest.raises(InputError) as got:
        JobRuntimeModel().fit(runs)
    assert got.value.message == "runs of 6 jobs given to one model: ['a', 'b', 'c', 'd', 'e']"
    assert got.value.fix == "fit one model per job (sparkpredict.models.persist.fit_all)"


def test_a_deadline_given_as_a_duration_is_read_as_its_seconds():
    """``"45m"`` is 2,700 s (mutant: the parser's import dropped, a NameError for any duration)."""
    m = law_model()
    at = {"input_bytes": [2 * GIB], "executors": [4.0]}
    np.testing.assert_array_equal(m.chance_within(at, "45m"), m.chance_within(at, 2700.0))
    np.testing.assert_array_equal(m.chance_within(at, "19s"), m.chance_within(at, 19.0))


def test_a_regressor_learns_from_runs_at_two_executor_counts():
    """Two executor counts are enough for a regressor (only one is refused; mutant: two refused
    as well)."""
    from test_mutation_gaps_intervals import _exact_runs

    m = JobRuntimeModel(kind="kernel_ridge").fit(_exact_runs(sizes=(1, 2, 4), counts=(2, 4)))
    assert (m.name_, m.n_runs_, m.training_range_["executors"]) == ("kernel_ridge", 6, (2.0, 4.0))


def test_a_model_saved_before_dropped_runs_were_counted_loads_with_none_dropped():
    """A saved model without ``dropped_runs`` (saved before it was kept) dropped none (mutant: 1)."""
    d = law_model().to_dict()
    del d["dropped_runs"]
    assert JobRuntimeModel.from_dict(d).dropped_runs_ == 0
