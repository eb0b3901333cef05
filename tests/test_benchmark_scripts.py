"""The benchmarks' what-if rules stand in for shipped functions: they must take what the shipped
ones take, or the script dies mid-run (advice_fallback's rules lacked `in_time` after `_choose`
gained it, and its section of RESULTS.md went stale unnoticed)."""
from __future__ import annotations

import inspect
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


def test_advice_fallback_rules_take_what_the_shipped_choice_takes():
    import advice_fallback as af

    from sparkpredict import advise

    shipped = list(inspect.signature(advise._choose).parameters)
    rules = (af.with_tolerance(0.0), af.with_tolerance(0.03), af.with_miss_price(10.0), af.with_near_best_chance())
    for rule in rules:
        assert list(inspect.signature(rule).parameters) == shipped
    # tolerance 0 is the shipped rule: the same choice on a question where nothing meets the deadline
    e, t = np.array([2, 4, 8]), np.array([90.0, 60.0, 50.0])
    up = t * 1.3
    args = ("cost", e, t, up, e * t / 3600, np.zeros(3, bool), np.ones(3, bool), 0, np.array([0.1, 0.3, 0.4]),
            np.array([False, False, False]))
    assert rules[0](*args) == advise._choose(*args) == (2, False)
