"""The demo's whole loop on a smaller grid (README's first command runs the full one): runs
recorded, a model fitted, the two advices, the report, and a second demo that reuses the runs."""
from __future__ import annotations

import math

import pytest


@pytest.mark.spark
def test_demo_records_fits_advises_meets_its_deadline_and_reuses_its_runs(spark_app, tmp_path, monkeypatch, capsys):
    import sparkpredict.advice_cache as cache
    from sparkpredict import suggest_executors
    from sparkpredict.demo import ADVICE_FACTOR, DEADLINE_MARGIN, run_demo
    from sparkpredict.features.runs import runs_table

    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))

    kw = {"store": tmp_path / "store", "workdir": tmp_path / "work", "sizes": "1MB,2MB,4MB", "executors": "1,2"}
    res = run_demo(**kw)
    assert not res.messages, res.messages
    assert [o.status for o in res.sweep.outcomes] == ["succeeded"] * 6
    runs = runs_table(tmp_path / "store")
    assert len(runs) == 6 and set(runs["job"]) == {"wordcount"}
    assert res.model_name and res.cv_mape is not None and (res.models_dir / "sparkpredict_models.json").is_file()
    assert res.advice_input_bytes == ADVICE_FACTOR * max(res.sweep.plan.sizes_bytes)
    # without a deadline, cost: the cheapest count; with the demo's deadline, some count meets it
    a, d = res.advice, res.deadline_advice
    assert a.cost_executor_hours == min(c.cost_executor_hours for c in a.candidates)
    swept = max(res.sweep.plan.executors)
    assert d.deadline_s == math.ceil(min(c.upper_s for c in a.candidates if c.executors <= swept) * DEADLINE_MARGIN)
    assert d.meets_deadline is True and d.upper_s <= d.deadline_s
    assert d.cost_executor_hours == min(c.cost_executor_hours for c in d.candidates if c.meets_deadline)
    assert "meets deadline" in d.summary()
    # the command the demo prints under "next:" (suggest --store) answers from the demo's own
    # fit, kept for the store as it is: a new process neither refits nor names another model
    cache._CACHE.clear()
    real_fit = cache._fit
    monkeypatch.setattr(cache, "_fit", lambda *a: pytest.fail("suggest --store refitted after the demo"))
    assert suggest_executors("wordcount", "1GB", store=tmp_path / "store").model_name == res.model_name
    monkeypatch.setattr(cache, "_fit", real_fit)
    # the demo prints both advices' warnings (the deadline's were left out)
    import sparkpredict.demo as demo_mod
    from sparkpredict.cli import main

    monkeypatch.setattr(demo_mod, "run_demo", lambda **_: res)
    capsys.readouterr()
    main(["demo", "--store", str(tmp_path / "store"), "--workdir", str(tmp_path / "work")])
    out = capsys.readouterr().out
    assert all(f"   warning: {w}" in out for w in a.warnings + d.warnings), out
    assert out.count("   warning: ") == len(set(a.warnings + d.warnings))
    page = res.report_path.read_text()
    assert res.report_path.parent == (tmp_path / "work").resolve() and "wordcount" in page
    again = run_demo(**kw)
    assert len(again.sweep.skipped) == 6 and not again.sweep.ran and not again.messages
