"""How a chosen component predicts (a mutation audit of models/selection.py, after the one in
test_mutation_gaps_models.py): the hybrid's correction beyond the training box, its fade, the
switch's blend and anchoring beyond the box on every side, the 1 ms floor, and the saved form.
Each test failed on a one-operator change the other tests let through. Expected values are
worked out here by hand from the equations' formulas (docs/models.md) and a one-split tree.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from test_mutation_gaps_models import _F

from sparkpredict.errors import DegenerateDataError
from sparkpredict.models import selection as SEL
from sparkpredict.models.analytical import FittedEquation

GIB = float(2**30)
BOX = {"input_bytes": (1.0 * GIB, 4.0 * GIB), "executors": (1.0, 4.0)}


def _amdahl(a, b=0.0, c=0.0):
    """a * S * ((1 - b) / E + b) + c (power 1)."""
    return FittedEquation("amdahl", 1, (a, b, c), 0.0, 10)


def _stump(feature, threshold, low, high):
    """An exported one-split tree: ``low`` where design column ``feature`` <= ``threshold``."""
    return {"type": "random_forest", "init": 0.0, "scale": 1.0, "depth": 1, "roots": [0],
            "left": [1, 1, 2], "right": [2, 1, 2], "feature": [feature, 0, 0],
            "threshold": [threshold, 0.0, 0.0], "value": [0.0, low, high]}


def _hybrid(fade=None, eq=None):
    # correction 0.1 where input per executor (design column 4, S/E in GiB) is at most 0.4, else 0.3
    return SEL.Component("hybrid", equation=eq or _amdahl(10.0), ml=_stump(4, 0.4, 0.1, 0.3),
                         ml_target="log_ratio", fade=fade, box=dict(BOX))


def _at(S, E):
    return _F(np.asarray(S, float), np.asarray(E, float))


def test_a_hybrid_multiplies_its_equation_by_the_exponent_of_the_correction_inside_the_box():
    p = SEL.predict_component(_hybrid(), _at([2.0, 1.0, 4.0], [4.0, 4.0, 2.0]), [])
    np.testing.assert_allclose(p, [5 * np.exp(0.3), 2.5 * np.exp(0.1), 20 * np.exp(0.3)], rtol=1e-12)


def test_beyond_the_counts_a_hybrid_reads_the_correction_at_the_largest_and_smallest_count():
    # at 8 executors S/E = 0.25 would read 0.1; at the edge count (4) it is 0.5: 0.3, as at 4
    # executors; below the counts (0.5 executors, a made-up point) the edge is 1 executor
    p = SEL.predict_component(_hybrid(), _at([2.0, 0.2], [8.0, 0.5]), [])
    np.testing.assert_allclose(p, [2.5 * np.exp(0.3), 4.0 * np.exp(0.1)], rtol=1e-12)


def test_beyond_the_sizes_the_correction_is_the_trees_own_not_clipped():
    # only the counts are clipped: at 8 GiB and 4 executors S/E = 2 (0.3), at 0.5 GiB 0.125 (0.1)
    p = SEL.predict_component(_hybrid(), _at([8.0, 0.5], [4.0, 4.0]), [])
    np.testing.assert_allclose(p, [20 * np.exp(0.3), 1.25 * np.exp(0.1)], rtol=1e-12)


def test_a_faded_correction_falls_linearly_to_nothing_at_the_fade_distance_beyond_the_box():
    h = _hybrid(fade=0.25)
    S = np.array([2.0, 2.0, 2.0, 2.0, 0.9, 4.4, 1.0])
    E = np.array([4.0, 4.5, 5.0, 8.0, 4.0, 4.5, 0.8])
    p = SEL.predict_component(h, _at(S, E), [])
    # distance beyond the box, the larger of size's and count's: 0, 1/8, 1/4, 1, 1/9 (below the
    # sizes: 1/0.9 - 1), max(1/10, 1/8), 1/4 (below the counts: 1/0.8 - 1)
    d = np.array([0.0, 0.125, 0.25, 1.0, 1 / 0.9 - 1, 0.125, 0.25])
    corr = np.array([0.3, 0.3, 0.3, 0.3, 0.1, 0.3, 0.3])  # S/E at the clipped count
    want = 10 * S / E * np.exp(corr * np.clip(1 - d / 0.25, 0, 1))
    np.testing.assert_allclose(p, want, rtol=1e-12)
    # no fade: the correction stays as at the edge however far
    flat = SEL.predict_component(_hybrid(), _at(S, E), [])
    np.testing.assert_allclose(flat, 10 * S / E * np.exp(corr), rtol=1e-12)


def test_a_hybrid_corrects_an_equation_floored_at_a_millisecond():
    # the equation's own prediction below 1 ms (here negative) counts as 1 ms before the correction
    h = _hybrid(eq=_amdahl(10.0, 0.0, -100.0))
    p = SEL.predict_component(h, _at([2.0], [4.0]), [])
    assert p[0] == pytest.approx(1e-3 * np.exp(0.3), rel=1e-12)


@pytest.mark.parametrize("kind", ["equation", "switch"])
def test_no_component_predicts_less_than_a_millisecond(kind):
    eq = SEL.Component("equation", equation=_amdahl(10.0, 0.0, -100.0))
    c = eq if kind == "equation" else SEL.Component("switch", parts=(eq, eq), box=dict(BOX))
    p = SEL.predict_component(c, _at([2.0, 2.0], [4.0, 64.0]), [])
    np.testing.assert_array_equal(p, [1e-3, 1e-3])


def _switch():
    # inner 10 S/E + 5, outer 20 S (0.5/E + 0.5): different shapes, different values at the edge
    inner = SEL.Component("equation", equation=_amdahl(10.0, 0.0, 5.0))
    outer = SEL.Component("equation", equation=_amdahl(20.0, 0.5, 0.0))
    return SEL.Component("switch", parts=(inner, outer), box=dict(BOX))


def _inner(S, E):
    return 10 * S / E + 5


def _outer(S, E):
    return 20 * S * (0.5 / E + 0.5)


@pytest.mark.parametrize("S, E, edge, d", [
    (2.0, 4.2, (2.0, 4.0), 0.05),          # past the counts, half-way through the blend
    (2.0, 0.5, (2.0, 1.0), 1.0),           # below the counts, far: the outer's shape alone
    (4.0 / 1.05, 1 / 1.02, (4.0 / 1.05, 1.0), 0.02),
    (0.5, 2.0, (1.0, 2.0), 1.0),           # below the sizes
    (1 / 1.08, 2.0, (1.0, 2.0), 0.08),
    (4.2, 4.4, (4.0, 4.0), 0.1),           # both: the larger distance (executors' 10 %) blends
    (8.0, 0.8, (4.0, 1.0), 1.0),           # beyond the sizes, below the counts
])
def test_beyond_the_box_a_switch_blends_into_the_outer_shape_met_at_the_nearest_point(S, E, edge, d):
    p = SEL.predict_component(_switch(), _at([S], [E]), [])[0]
    w = min(d / SEL.BLEND, 1.0)
    anchored = _outer(S, E) / _outer(*edge) * _inner(*edge)
    assert p == pytest.approx(_inner(S, E) ** (1 - w) * anchored ** w, rel=1e-12)


def test_inside_the_box_a_switch_is_its_inner_part_and_continuous_at_the_edge():
    sw = _switch()
    S = np.array([1.0, 4.0, 2.5, 4.0, 4.0 * (1 + 1e-9)])
    E = np.array([1.0, 4.0, 3.0, 4.0 * (1 + 1e-9), 4.0])
    p = SEL.predict_component(sw, _at(S, E), [])
    np.testing.assert_allclose(p[:3], _inner(S[:3], E[:3]), rtol=1e-12)
    np.testing.assert_allclose(p[3:], _inner(4.0, 4.0), rtol=1e-8)


def test_anchored_meets_the_inner_part_at_the_edge_and_follows_the_outer_ones_ratio_beyond():
    sw = _switch()
    inner, outer = sw.parts
    F = _at([4.0, 8.0, 8.0, 2.0], [4.0, 4.0, 8.0, 16.0])
    a = SEL._anchored(inner, outer, F, [], sw.box)
    np.testing.assert_allclose(a, [_inner(4, 4), _outer(8, 4) / _outer(4, 4) * _inner(4, 4),
                                   _outer(8, 8) / _outer(4, 4) * _inner(4, 4),
                                   _outer(2, 16) / _outer(2, 4) * _inner(2, 4)], rtol=1e-12)


def test_names_and_the_saved_form_of_every_kind_of_component():
    h = _hybrid(fade=0.25)
    h.single_size = True
    ml = SEL.Component("ml", ml=dict(_stump(0, 2.0, 30.0, 60.0), type="gbm"))
    eq = SEL.Component("equation", equation=_amdahl(10.0, 0.1, 2.0))
    sw = SEL.Component("switch", parts=(h, SEL.Component("hybrid", equation=h.equation, ml=h.ml,
                                                        ml_target="log_ratio", box=dict(BOX))),
                       box=dict(BOX))
    assert [c.name for c in (h, ml, eq, sw)] == ["hybrid:amdahl~fade", "gbm", "amdahl",
                                                 "hybrid:amdahl~fade|hybrid:amdahl"]
    F = _at([0.5, 2.0, 3.0, 8.0], [0.5, 2.0, 4.0, 6.0])
    for c in (h, ml, eq, sw):
        back = SEL.component_from_dict(json.loads(json.dumps(SEL.component_to_dict(c))))
        assert (back.kind, back.name) == (c.kind, c.name)
        assert SEL.component_to_dict(back) == SEL.component_to_dict(c), c.name
        np.testing.assert_array_equal(SEL.predict_component(back, F, []), SEL.predict_component(c, F, []))
    # a saved hybrid keeps what it was; one saved without the newer keys reads their defaults
    d = SEL.component_to_dict(h)
    assert (d["fade"], d["single_size"], d["ml_target"], d["box"]) == (0.25, True, "log_ratio",
                                                                      {k: list(v) for k, v in BOX.items()})
    old = SEL.component_from_dict({"kind": "equation", "equation": eq.equation.to_dict()})
    assert (old.ml_target, old.single_size, old.fade, old.box, old.ml) == ("runtime", False, None, None, None)
    # the ML component predicts with its tree (design column 0 is the size in GiB)
    np.testing.assert_array_equal(SEL.predict_component(ml, F, []), [30.0, 30.0, 60.0, 60.0])


def test_a_hybrid_without_a_box_keeps_its_correction_unclipped_and_unfaded():
    # a component built without the training box (box=None; the fade needs one, so it is ignored)
    h = SEL.Component("hybrid", equation=_amdahl(10.0), ml=_stump(4, 0.4, 0.1, 0.3),
                      ml_target="log_ratio", fade=0.25)
    p = SEL.predict_component(h, _at([2.0, 2.0], [8.0, 2.0]), [])
    np.testing.assert_allclose(p, [2.5 * np.exp(0.1), 10 * np.exp(0.3)], rtol=1e-12)
    # with a box that bounds the sizes only, the counts are not clipped either
    h.box, h.fade = {"input_bytes": BOX["input_bytes"]}, None
    np.testing.assert_allclose(SEL.predict_component(h, _at([2.0], [8.0]), []), [2.5 * np.exp(0.1)], rtol=1e-12)


# ---- when no model can be chosen ------------------------------------------------------------

def _runs(S, E):
    S, E = np.asarray(S, float), np.asarray(E, float)
    return _F(S, E), 10 + 20 * S / E


@pytest.mark.parametrize("S, E, what, fix", [
    ([1, 2, 4, 1, 2, 4], [2] * 6, ("no runtime equation can be fitted to these 6 runs (3 input sizes, "
                                   "1 executor count)"), "record runs with at least two executor counts"),
    ([1, 2, 4, 8, 1], [2, 2, 2, 2, 2], "no runtime equation can be fitted to these 5 runs", "record runs with at least two"),
    ([1, 1, 2, 2, 4], [1, 2, 1, 2, 1], "these 5 runs (3 input sizes, 2 executor counts) are too few",
     "record at least 1 more run of the job (6 in all), at two or more executor counts"),
    ([1, 2, 4, 8], [1, 2, 1, 2], "these 4 runs (4 input sizes, 2 executor counts) are too few",
     "record at least 2 more runs of the job (6 in all)"),
])
def test_select_names_what_runs_to_record_when_no_equation_scores(S, E, what, fix):
    F, y = _runs(S, E)
    with pytest.raises(DegenerateDataError) as e:
        SEL.select(F, y, [])
    assert str(e.value).startswith(what) and e.value.fix.startswith(fix)


def test_six_runs_at_two_counts_are_not_too_few_when_no_equation_scores():
    # the third reason: enough runs and counts, yet no equation fitted every fold
    F, y = _runs([1, 1, 2, 2, 4, 4], [1, 2, 1, 2, 1, 2])
    err = SEL._not_cross_validated(F, y)
    assert str(err).startswith("no runtime equation could be fitted in every cross-validation fold of "
                               "these 6 runs (3 input sizes, 2 executor counts)")
    assert "--kind amdahl" in err.fix


def test_the_second_try_is_made_only_when_a_fold_is_unfittable_and_a_random_third_remains():
    # a random third trains on one count (see test_mutation_gaps_models): retried without it
    S = np.array([1.0, 2.0, 4.0] * 3)
    interp, _ = SEL.folds(_F(S, np.ones(9)))
    assert SEL._unfittable_fold(_F(S, np.where(interp[0], 2.0, 1.0)), 0)
    # every fold fittable: nothing to leave out
    F, _ = _runs(np.repeat([1.0, 2.0, 4.0], 3), np.tile([1.0, 2.0, 4.0], 3))
    assert sum(map(len, SEL.folds(F))) == 7 and not SEL._unfittable_fold(F, 0)
    F, _ = _runs(np.repeat([1.0, 2.0, 4.0], 4), np.tile([1.0, 2.0], 6))  # 3 thirds, 2 size folds
    assert [len(f) for f in SEL.folds(F, fittable_only=True)] == [3, 2] and not SEL._unfittable_fold(F, 0)
    # 5 runs: no random thirds; leaving out the smallest size leaves 3 runs (unfittable), the
    # largest 4 (fittable), but a choice on one extrapolation fold alone is not made
    F, _ = _runs([1, 1, 2, 2, 4], [1, 2, 1, 2, 1])
    kept = SEL.folds(F, fittable_only=True)
    assert kept[0] == [] and len(kept[1]) == 1 and len(SEL.folds(F)[1]) == 2
    assert not SEL._unfittable_fold(F, 0)


def test_one_input_size_is_fitted_linear_in_size_and_flagged():
    # one size: f(S) = S (docs/models.md), so twice the size doubles the size-bound part
    E = np.array([1.0, 2.0, 4.0, 8.0, 1.0, 2.0, 4.0, 8.0])
    y = 80 / E  # no serial part or constant: a = 20 per GiB, the one fit
    c = SEL.fit_component("amdahl", _at(np.full(8, 4.0), E), y, [])
    assert c.single_size and c.equation.power == 1 and c.kind == "equation"
    p = SEL.predict_component(c, _at([4.0, 8.0], [2.0, 2.0]), [])
    assert p[0] == pytest.approx(40.0, rel=1e-6) and p[1] == pytest.approx(80.0, rel=1e-6)
