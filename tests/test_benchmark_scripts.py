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


def test_publish_prints_the_lines_and_writes_the_section_write_section_wrote(tmp_path, monkeypatch, capsys):
    """The benchmarks' table-and-write tail is _results.publish: the body it prints and the section
    it writes are the joined lines, as each script wrote them itself; --no-write leaves RESULTS.md."""
    import _results

    lines = ["## bench: a title", "", "| a | b |", "|---|---|", "| 1 | 2 |"]
    monkeypatch.setattr(_results, "RESULTS", tmp_path / "RESULTS.md")
    assert _results.publish("bench", lines, write=False) == "\n".join(lines)
    assert capsys.readouterr().out == "\n".join(lines) + "\n" and not (tmp_path / "RESULTS.md").exists()
    _results.publish("bench", lines)
    published = (tmp_path / "RESULTS.md").read_text()
    monkeypatch.setattr(_results, "RESULTS", tmp_path / "by_hand.md")
    _results.write_section("bench", "\n".join(lines))
    by_hand = (tmp_path / "by_hand.md").read_text()
    assert published.split(" · _run:_ ")[0] == by_hand.split(" · _run:_ ")[0]  # all but the minute
    assert f"<!-- BEGIN bench -->\n{lines[0]}\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n_Command:_ " in published
