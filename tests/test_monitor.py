"""The slowdown monitor on task metrics with known values (no JVM): features, labels, Shapley."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from sparkpredict import monitor as m
from sparkpredict import monitor_training
from sparkpredict.errors import (
    DegenerateDataError,
    InputError,
    NotFittedError,
    UnknownJobError,
)
from sparkpredict.store import io


def _tasks(run_id, stage_id, rows, t0=1_000_000):
    """rows: dicts with run, cpu, dur, finish_s (+ optional gc, fetch, write, deser, ser)."""
    out = []
    for i, r in enumerate(rows):
        finish = t0 + int(r["finish_s"] * 1000)
        out.append({
            "run_id": run_id, "stage_id": stage_id, "stage_attempt_id": 0, "task_id": stage_id * 1000 + i,
            "task_index": i, "attempt": 0, "executor_id": "driver", "host": "h", "launch_ms": finish - r["dur"],
            "finish_ms": finish, "duration_ms": r["dur"], "getting_result_ms": 0, "status": "SUCCESS",
            "executor_run_time_ms": r["run"], "executor_cpu_time_ms": float(r["cpu"]),
            "executor_deserialize_time_ms": r.get("deser", 0), "jvm_gc_time_ms": r.get("gc", 0),
            "result_serialization_time_ms": r.get("ser", 0), "input_bytes": r.get("input", 1 << 20),
            "shuffle_read_bytes": 0, "shuffle_fetch_wait_ms": r.get("fetch", 0),
            "shuffle_write_bytes": 1 << 18, "shuffle_write_time_ms": float(r.get("write", 0)),
            "output_bytes": 0, "memory_spilled_bytes": r.get("spill", 0), "disk_spilled_bytes": 0})
    return out


def _stage(run_id, stage_id, name, tasks, t0=1_000_000):
    sub = min(t["launch_ms"] for t in tasks)
    comp = max(t["finish_ms"] for t in tasks)
    return {"run_id": run_id, "job_id": 0, "stage_id": stage_id, "stage_attempt_id": 0, "name": name,
            "num_tasks": len(tasks), "submission_ms": sub, "completion_ms": comp, "duration_ms": comp - sub,
            "status": "succeeded"}


def test_stage_features_from_known_task_metrics():
    rows = [{"run": 1000, "cpu": 200, "dur": 1100, "finish_s": 0.5, "gc": 100, "deser": 50, "ser": 10},
            {"run": 1000, "cpu": 400, "dur": 1100, "finish_s": 1.0, "gc": 100, "deser": 50, "ser": 10},
            {"run": 1000, "cpu": 600, "dur": 1100, "finish_s": 4.0, "gc": 100, "deser": 50, "ser": 10},
            {"run": 1000, "cpu": 1000, "dur": 2200, "finish_s": 5.0, "gc": 100, "deser": 50, "ser": 10}]
    tasks = pd.DataFrame(_tasks("r1", 0, rows))
    stages = pd.DataFrame([_stage("r1", 0, "count at x.py:1", tasks.to_dict("records"))])
    f = m.stage_features(stages, tasks).iloc[0]
    assert f["cpu_ratio"] == pytest.approx(2200 / 4000)
    assert f["gc_ratio"] == pytest.approx(0.1)
    # scheduler delay = duration - run - deserialize - result serialization - getting result
    assert f["sched_ms"] == pytest.approx((40 * 3 + 1140) / 4)
    assert f["deser_ms"] == pytest.approx(50)
    assert f["skew"] == pytest.approx(2200 / 1100)
    # 3 s windows from the first launch (t0 - 2.2 s): finishes at 0.5, 1.0 | 4.0, 5.0 s after t0
    # fall in windows 0 (0.2, 0.4) and 2 (0.6, 1.0): window means 0.3 and 0.8, mins 0.2 and 0.6.
    assert f["w3_cpu_ratio_mean"] == pytest.approx(0.55)
    assert f["w3_cpu_ratio_min"] == pytest.approx(0.4)
    assert f["w3_cpu_ratio_range"] == pytest.approx(0.3)
    # one 20 s window holds all four tasks
    assert f["w20_cpu_ratio_range"] == pytest.approx(0.8)
    assert f["w20_cpu_ratio_std"] == pytest.approx(np.std([0.2, 0.4, 0.6, 1.0]))
    assert f["w20_gc_ratio_std"] == pytest.approx(0.0)
    assert set(m.FEATURES) <= set(f.index)
    assert set(m.FEATURE_GROUPS.values()) == set(m.GROUPS)


def test_signatures_match_the_same_stage_across_runs():
    st = pd.DataFrame({"run_id": ["a", "a", "a", "b", "b", "b"], "stage_id": [0, 1, 2, 7, 8, 9],
                       "name": ["count", "count", "save", "count", "count", "save"],
                       "num_tasks": [8, 8, 4, 8, 8, 4]})
    st.loc[3, "name"] = "count at <unknown>:0"  # Py4J call sites differ between runs
    st.loc[0, "name"] = "count at NativeMethodAccessorImpl.java:0"
    st.loc[[2, 5], "name"] = ["save at /tmp/a/job.py:9", "save at /other/job.py:9"]
    sig = m.stage_signatures(st)
    assert list(sig[:3]) == list(sig[3:])
    assert sig.iloc[0] != sig.iloc[1]  # the second `count` is another stage


def _feature_frame(run_stage_durations, clean):
    rows = []
    for rid, durs in run_stage_durations.items():
        for sid, d in enumerate(durs):
            rows.append({"run_id": rid, "stage_id": sid, "signature": f"s{sid}", "duration_ms": d,
                         **{f: 0.5 for f in m.FEATURES}})
    return m.with_baseline(pd.DataFrame(rows), clean)


def test_baseline_is_the_median_of_the_other_clean_runs():
    df = _feature_frame({"c1": [100, 10], "c2": [200, 10], "c3": [300, 10], "x": [400, 20]},
                        ["c1", "c2", "c3"])
    x = df[df.run_id == "x"].set_index("stage_id")
    assert x.loc[0, "expected_ms"] == 200 and x.loc[0, "degradation"] == pytest.approx(1.0)
    assert x.loc[1, "degradation"] == pytest.approx(1.0)
    c1 = df[(df.run_id == "c1") & (df.stage_id == 0)].iloc[0]
    assert c1["expected_ms"] == 250  # leave one out: median of 200 and 300
    act, exp, d = m.run_degradation(x.reset_index())
    assert (act, exp) == (420, 210) and d == pytest.approx(1.0)


def _synthetic_training(n=240, seed=0):
    """Stage rows whose degradation is driven by the CPU group only (cpu_ratio falls)."""
    brng = np.random.default_rng(0)  # the same clean baseline for every call
    base = {f: brng.uniform(0.05, 0.5) for f in m.FEATURES}
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        d = rng.choice([0.0, 0.0, 0.3, 0.6, 1.0])
        x = {f: base[f] + rng.normal(0, 0.03) for f in m.FEATURES}  # noise in every group
        for f in m.FEATURES:
            if m.FEATURE_GROUPS[f] == "cpu" and "cpu_ratio" in f:
                x[f] = base[f] / (1 + d)
        rows.append({"run_id": f"r{i}", "stage_id": 0, "duration_ms": 1000 * (1 + d),
                     "expected_ms": 1000.0, "degradation": d, **x,
                     **{f"base_{f}": base[f] for f in m.FEATURES}})
    return pd.DataFrame(rows)


def test_shapley_names_the_group_that_drives_the_slowdown_and_sums_up():
    train = _synthetic_training()
    model = m.DegradationModel(autoencoder=False, n_estimators=60, learning_rate=0.1).fit(train)
    probe = _synthetic_training(n=40, seed=1)
    slow = probe[probe.degradation >= 0.6].head(3)
    phi = m.shapley(model, slow)
    assert max(phi, key=phi.get) == "cpu"
    assert phi["cpu"] > 0.3 and all(abs(phi[g]) < 0.1 for g in ("memory", "network", "disk"))
    # efficiency: the values add up to estimate(all features) - estimate(all at baseline)
    x0 = model.baseline_features(slow)
    at_base = slow.assign(**dict(zip(m.FEATURES, x0.T)))
    total = m.run_estimate(model, slow, x0) - m.run_estimate(model, at_base, x0)
    assert sum(phi.values()) == pytest.approx(total, abs=1e-9)
    assert m.run_estimate(model, slow) == pytest.approx(slow.degradation.mean(), abs=0.1)


def test_model_contract_errors():
    with pytest.raises(NotFittedError):
        m.DegradationModel().predict(_synthetic_training(n=5))
    with pytest.raises(DegenerateDataError, match="only 5 labelled stages"):
        m.DegradationModel().fit(_synthetic_training(n=5))
    with pytest.raises(InputError, match="use 'host', 'host3' or 'none'"):
        m.DegradationModel(culprit="hosts").fit(_synthetic_training(n=40))


def _store_with_runs(path, plan, seed=0, names=None, jobs=None):
    """plan: list of (run_id, label, slow_factor, kind) -> a store of 2-stage runs
    (``names``: run_id -> its own list of stage names instead; ``jobs``: run_id -> job, else etl)."""
    rng = np.random.default_rng(seed)
    runs, stages, tasks = [], [], []
    for k, (rid, label, f, kind) in enumerate(plan):
        t0 = 2_000_000 + k * 100_000
        for sid, name in enumerate((names or {}).get(rid, ["count at job.py:3", "save at job.py:9"])):
            rows = []
            for i in range(8):
                base_run = 800 + rng.normal(0, 15)
                if kind == "cpu":  # same CPU time, stretched run time
                    r = {"run": int(base_run * f), "cpu": 0.9 * base_run}
                elif kind == "disk":  # slower shuffle writes
                    r = {"run": int(base_run * f), "cpu": 0.9 * base_run, "write": base_run * (f - 1 + 0.02)}
                else:
                    r = {"run": int(base_run), "cpu": 0.9 * base_run, "write": 0.02 * base_run}
                # "gap": tasks of normal metrics, started f times further apart (the driver paused)
                spread = f if kind == "gap" else 1.0
                r.update(dur=r["run"] + 20, finish_s=(i // 2 + 1) * r["run"] * spread / 1000 + sid * 10)
                rows.append(r)
            tk = _tasks(rid, sid, rows, t0)
            tasks += tk
            stages.append(_stage(rid, sid, name, tk))
        runs.append({"run_id": rid, "app_id": rid, "job": (jobs or {}).get(rid, "etl"), "status": "succeeded", "start_ms": t0,
                     "properties_json": json.dumps({m.LABEL_KEY: label}), "updated_ms": t0})
    st = io.open(path, create=True)
    st.append({"runs": pd.DataFrame(runs), "stages": pd.DataFrame(stages), "tasks": pd.DataFrame(tasks)})
    return st


def test_explain_run_end_to_end_on_a_store(tmp_path):
    plan = [(f"clean{i}", "none", 1.0, "none") for i in range(4)]
    plan += [(f"cpu{i}", f"cpu:{1 + i % 2}", f, "cpu") for i, f in enumerate([1.3, 1.6, 2.0, 1.4, 1.8])]
    plan += [(f"disk{i}", f"disk:{1 + i % 2}", f, "disk") for i, f in enumerate([1.3, 1.6, 2.0, 1.4, 1.8])]
    st = _store_with_runs(tmp_path / "s", plan)
    model = m.fit_monitor(st, autoencoder=False, n_estimators=100)
    held = _store_with_runs(tmp_path / "h", plan[:4] + [("victim", "cpu:2", 1.7, "cpu"),
                                                         ("victim2", "disk:2", 1.7, "disk")], seed=5)
    e = m.explain_run("victim", held, model, threshold=0.2)
    assert e.main_cause == "cpu" and e.main_share > 0.5
    assert e.degradation == pytest.approx(0.7, abs=0.1)
    assert e.estimated_degradation == pytest.approx(e.degradation, abs=0.25)
    assert e.violated and e.qos == {0.05: True, 0.10: True, 0.20: True}
    assert e.clean_runs == 4 and len(e.stages) == 2
    assert sum(e.shares.values()) == pytest.approx(1.0)
    assert m.explain_run("victim2", held, model).main_cause == "disk"
    clean = m.explain_run("clean0", held, model)
    assert abs(clean.degradation) < 0.05 and not clean.qos[0.05]
    # no slowdown, so no cause, whatever small positive Shapley values the noise leaves
    assert clean.estimated_degradation < m.CAUSE_MIN_SLOWDOWN and clean.main_cause is None
    # these synthetic runs have no host samples: cpu is the default, and it says so
    assert e.matched_share == pytest.approx(1.0) and len(e.warnings) == 1
    assert e.warnings[0].startswith("cpu is named by default: the run has no host samples")
    assert m.explain_run("victim2", held, model).warnings == []  # disk: named by its metrics
    line = e.summary()
    assert line.startswith(f"run victim (job {e.job}): {e.degradation * 100:+.1f}% against its clean runs")
    assert f"main cause cpu ({e.main_share:.0%} of the slowdown)" in line and line.endswith("QoS at 20% VIOLATED")
    assert "its metrics name no cause" in clean.summary() and clean.summary().endswith("QoS at 10% met")
    with pytest.raises(UnknownJobError, match="no run 'nope'"):
        m.explain_run("nope", held, model)


def test_a_run_slowed_where_its_task_metrics_do_not_look_says_so_beside_violated(tmp_path, capsys):
    from sparkpredict.cli import main

    plan = [(f"clean{i}", "none", 1.0, "none") for i in range(4)]
    plan += [(f"cpu{i}", f"cpu:{1 + i % 2}", f, "cpu") for i, f in enumerate([1.3, 1.6, 2.0, 1.4, 1.8])]
    model = m.fit_monitor(_store_with_runs(tmp_path / "s", plan), autoencoder=False, n_estimators=100)
    held = _store_with_runs(tmp_path / "h", plan[:4] + [("paused", "none", 1.6, "gap")], seed=5)
    e = m.explain_run("paused", held, model, threshold=0.2)
    assert e.degradation > 0.3 and e.violated
    assert e.estimated_degradation < m.CAUSE_MIN_SLOWDOWN and e.main_cause is None and not e.cause_withheld
    said = f"yet it measured {e.degradation * 100:+.1f}%: the time went where the task metrics do not look"
    assert said in e.summary() and e.summary().endswith("QoS at 20% VIOLATED")
    # a run that met its threshold keeps the short reason
    clean = m.explain_run("clean0", held, model)
    assert "yet it measured" not in clean.summary() and "estimated slowdown under 5%" in clean.summary()
    assert main(["explain", "paused", "--store", str(tmp_path / "h"), "--training-store", str(tmp_path / "s"),
                 "--threshold", "0.2"]) == 0
    out = capsys.readouterr().out
    assert "QoS at 20%: VIOLATED" in out and f"main cause: none (an estimated slowdown under 5%, {said}" in out


def test_explain_never_compares_a_run_with_itself_and_says_how_much_it_compared(tmp_path, capsys):
    from sparkpredict.cli import main

    plan = [(f"clean{i}", "none", 1.0, "none") for i in range(3)]
    model = m.fit_monitor(_store_with_runs(tmp_path / "train", plan + [
        (f"cpu{i}", "cpu:1", f, "cpu") for i, f in enumerate([1.3, 1.6, 2.0, 1.5, 1.8])]),
        autoencoder=False, n_estimators=50)
    # the only run of its job: it would be its own baseline (a slowdown of 0 by construction)
    lone = _store_with_runs(tmp_path / "lone", [("solo", None, 1.7, "cpu")])
    with pytest.raises(DegenerateDataError, match="no other clean run of job 'etl'"):
        m.explain_run("solo", lone, model)
    # another application under the same job name: no stage in common
    names = {"alien": ["read at other.py:1", "save at other.py:5"],
             "mixed": ["count at job.py:3", "join at other.py:2", "save at other.py:7"]}
    st = _store_with_runs(tmp_path / "s", plan + [("alien", "cpu:1", 1.5, "cpu"), ("mixed", "cpu:1", 1.5, "cpu")],
                          names=names)
    with pytest.raises(DegenerateDataError, match="none of its 2 stages matches a stage of the 3 other"):
        m.explain_run("alien", st, model)
    # one stage of three in common: the figures cover a third of the run, and say so
    e = m.explain_run("mixed", st, model)
    assert e.matched_share == pytest.approx(1 / 3, abs=0.05)
    assert e.actual_ms < 0.4 * sum(s["duration_ms"] for s in st.read("stages", run_ids=["mixed"]).to_dict("records"))
    assert "only 33% of this run's stage time" in e.warnings[0]
    assert len([w for w in e.warnings if not w.startswith("cpu is named by default")]) == 1
    assert main(["explain", "mixed", "--store", str(tmp_path / "s")]) == 0
    assert "warning: only 33%" in capsys.readouterr().out
    assert main(["explain", "solo", "--store", str(tmp_path / "lone")]) == 2
    err = capsys.readouterr().err
    assert "no other clean run" in err and "fix:" in err and "Traceback" not in err


def test_explain_cli_prints_and_exits(tmp_path, capsys):
    from sparkpredict.cli import main

    plan = [(f"clean{i}", "none", 1.0, "none") for i in range(3)]
    plan += [(f"cpu{i}", f"cpu:{1 + i % 2}", f, "cpu") for i, f in enumerate([1.3, 1.6, 2.0, 1.8, 1.5])]
    plan += [(f"disk{i}", f"disk:{1 + i % 2}", f, "disk") for i, f in enumerate([1.3, 1.6, 2.0])]
    _store_with_runs(tmp_path / "s", plan)
    assert main(["explain", "cpu2", "--store", str(tmp_path / "s"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["run_id"] == "cpu2" and out["main_cause"] == "cpu"
    assert out["degradation"] == pytest.approx(1.0, abs=0.1)
    assert main(["explain", "cpu2", "--store", str(tmp_path / "s")]) == 0
    text = capsys.readouterr().out
    assert "main cause: cpu" in text and "QoS at 10%: VIOLATED" in text
    assert main(["explain", "zzz", "--store", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    # the fix names runs that are there, and a command that lists them (`runs` needs --out)
    assert "no run 'zzz'" in err and "fix: give one of its runs, e.g. " in err, err
    assert f"`sparkpredict store summary --store {tmp_path / 's'}` lists the latest runs" in err
    # a run id a character off is named, as `store edit` names it
    assert main(["explain", "cpu22", "--store", str(tmp_path / "s")]) == 2
    assert "fix: did you mean cpu2? give one of its runs, e.g. " in capsys.readouterr().err
    assert main(["explain", "cpu2", "--store", str(tmp_path / "s"), "--threshold", "-1"]) == 2
    # a threshold between whole percents is shown as given: "QoS at 10%: VIOLATED ... 10%:ok"
    # had read as both at 0.095
    capsys.readouterr()
    assert main(["explain", "clean0", "--store", str(tmp_path / "s"), "--threshold", "0.095"]) == 0
    assert "  QoS at 9.5%: met   5%:" in capsys.readouterr().out
    assert m.explain_run("cpu2", str(tmp_path / "s"), threshold=0.125).summary().endswith("QoS at 12.5% VIOLATED")


def test_explain_on_a_store_without_runs_says_so(tmp_path, capsys):
    # neither a broken "give `...` lists the latest runs" nor the advice's "pass models=DIR"
    from sparkpredict.cli import main
    from sparkpredict.store import io

    io.open(tmp_path / "empty", create=True)
    for args in (["zzz"], ["--job", "etl"]):
        assert main(["explain", *args, "--store", str(tmp_path / "empty")]) == 2
        err = capsys.readouterr().err
        assert "has no runs yet" in err and "models" not in err and "give `" not in err, err
        assert "fix: record runs first (sparkpredict submit, demo or ingest)" in err, err


def test_explain_text_writes_percentages_without_a_space(capsys):
    """Every percentage explain prints reads "84.4%", as suggest and simulate write them: a
    reviewer found "+84.4 %" and "82%" in one output. The bundled dataset's network run prints
    every line that carries one (culprit, host footprint, stages); its summary() is what
    explain --job lists (that command refits a runtime model: 17 s more, for the same line)."""
    import re

    from sparkpredict.cli import main

    store = str(m.DEFAULT_TRAINING_STORE)
    assert main(["explain", "app-20261130022624-0000", "--store", store]) == 0
    out = capsys.readouterr().out
    for line in ("  QoS at 10%: VIOLATED", "% of the estimated slowdown)", "who took the cores",
                 "time stalled on I/O", "expected (+"):
        assert line in out, out
    out += m.explain_run("app-20261130022624-0000", store).summary()
    assert "% against its clean runs" in out and "% of the slowdown); QoS at 10% VIOLATED" in out, out
    assert re.search(r"\d %", out) is None, out


def test_the_trained_monitor_is_kept_on_disk_until_new_labelled_runs_arrive(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    plan = [(f"clean{i}", "none", 1.0, "none") for i in range(3)]
    plan += [(f"cpu{i}", "cpu:1", f, "cpu") for i, f in enumerate([1.3, 1.6, 2.0, 1.8, 1.5])]
    st = _store_with_runs(tmp_path / "s", plan)
    # cached_monitor looks fit_monitor up in monitor_training, not in the re-exporting monitor
    real, fits = monitor_training.fit_monitor, []

    def counting(*a, **k):
        fits.append(1)
        return real(*a, **k)

    monkeypatch.setattr(monitor_training, "fit_monitor", counting)
    monitor_training._CACHE.clear()
    first = m.explain_run("cpu2", st)
    (entry,) = (tmp_path / "cache" / "monitor").glob("*.pkl")
    monitor_training._CACHE.clear()  # a new process
    again = m.explain_run("cpu2", st)
    assert fits == [1]
    assert again.estimated_degradation == first.estimated_degradation and again.shares == first.shares

    entry.write_bytes(b"not a pickle")
    monitor_training._CACHE.clear()
    assert m.explain_run("cpu2", st).estimated_degradation == pytest.approx(first.estimated_degradation)
    assert fits == [1, 1]

    _store_with_runs(tmp_path / "s", [("cpu9", "cpu:2", 1.7, "cpu")], seed=3)  # a new labelled run
    monitor_training._CACHE.clear()
    m.explain_run("cpu2", io.open(tmp_path / "s"))
    assert fits == [1, 1, 1]


def _waiting_runs(n_runs=24, seed=0):
    """Runs whose tasks wait longer for a core (wait_ms up); the host counters say who took the
    cores: user-mode CPU for ``cpu`` neighbours, softirq for ``network`` ones."""
    brng = np.random.default_rng(0)
    base = {f: brng.uniform(0.05, 0.5) for f in m.FEATURES}
    base.update(wait_ms=100.0, run_ms=1000.0)
    hbase = {h: 0.1 for h in m.HOST_FEATURES}
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_runs):
        kind = ["none", "cpu", "network"][i % 3]
        d = 0.0 if kind == "none" else rng.uniform(0.3, 0.8)
        x = {f: base[f] * (1 + rng.normal(0, 0.02)) for f in m.FEATURES}
        x["wait_ms"] = base["wait_ms"] + 1000.0 * d  # the whole slowdown is waiting for a core
        h = {k: v * (1 + rng.normal(0, 0.05)) for k, v in hbase.items()}
        if kind == "cpu":
            h["host_user_share"] = 0.1 + 0.5 * d
        elif kind == "network":
            h["host_softirq_share"] = 0.1 + 0.5 * d
            h["host_net_mib_s"] = 0.1 + 20 * d
        for s in range(3):
            rows.append({"run_id": f"r{i}", "stage_id": s, "job": f"j{i % 2}", "label": kind if kind == "none"
                         else f"{kind}:1", "num_tasks": 4, "duration_ms": 1000 * (1 + d), "expected_ms": 1000.0,
                         "degradation": d, "run_ms": 1000.0 * (1 + d), **x, **h,
                         **{f"base_{f}": base[f] for f in m.FEATURES}, "base_run_ms": 1000.0,
                         **{f"base_{k}": v for k, v in hbase.items()}})
    return pd.DataFrame(rows)


def test_host_counters_say_who_took_the_cores_without_changing_the_estimate():
    train = _waiting_runs()
    kw = {"n_estimators": 40, "learning_rate": 0.1, "correction": 0.0}
    model = m.DegradationModel(**kw).fit(train)
    blind = m.DegradationModel(culprit="none", **kw).fit(train)
    assert model.culprit_ is not None and blind.culprit_ is None
    probe = _waiting_runs(n_runs=6, seed=1)
    for rid, kind in (("r2", "network"), ("r1", "cpu")):
        run = probe[probe.run_id == rid].reset_index(drop=True)
        p = model.culprit_probabilities(run)
        assert max(p, key=p.get) == kind and sum(p.values()) == pytest.approx(1.0)
        phi, phi_blind = m.shapley(model, run), m.shapley(blind, run)
        assert max(phi, key=phi.get) == kind
        assert max(phi_blind, key=phi_blind.get) == "cpu"  # without host counters the wait is CPU's
        # the estimate is the same; only its attribution moved, and it still adds up
        assert m.run_estimate(model, run) == pytest.approx(m.run_estimate(blind, run))
        assert sum(phi.values()) == pytest.approx(sum(phi_blind.values()), abs=1e-9)
    # a run without host samples: everything as before
    bare = probe[probe.run_id == "r2"].assign(**{h: np.nan for h in m.HOST_FEATURES}).reset_index(drop=True)
    assert model.culprit_probabilities(bare) == {"cpu": 1.0, "memory": 0.0, "network": 0.0, "disk": 0.0}
    assert m.shapley(model, bare) == pytest.approx(m.shapley(blind, bare))


def test_slowest_runs_of_a_real_history_are_the_slowed_ones(capsys):
    """tests/data/history's wordcount: the runs furthest above the runtime model are ones the
    monitor measures as slowed against the job's other runs."""
    from pathlib import Path

    from sparkpredict.cli import main

    hist = Path(__file__).parent / "data" / "history"
    found = m.slowest_runs("wordcount", hist, top=2)
    assert len(found) == 2 and found[0].runtime_over_model >= found[1].runtime_over_model >= 1.25
    for r in found:
        assert r.error is None and r.explanation.run_id == r.run_id and r.explanation.degradation > 0.5
        assert r.explanation == m.explain_run(r.run_id, hist)  # the stages read once: same result
    assert main(["explain", "--job", "wordcount", "--top", "2", "--store", str(hist)]) == 0
    out = capsys.readouterr().out
    assert f"  {found[0].runtime_over_model:5.2f}x  {found[0].explanation.summary()}\n" in out
    assert main(["explain", "--store", str(hist)]) == 2
    assert "give a RUN_ID or --job J, not neither" in capsys.readouterr().err
    assert main(["explain", found[0].run_id, "--job", "wordcount", "--store", str(hist)]) == 2
    with pytest.raises(InputError, match="top 0 is not a whole number of at least 1"):
        m.slowest_runs("wordcount", hist, top=0)


def test_explain_job_reads_the_stage_windows_once_for_all_the_runs_it_lists(monkeypatch):
    """explain --job's check of the time outside the stages read the stages table once per run it
    listed (up to 50): tests/data/history's 24 wordcount runs read it 26 times, 5 times for 3 runs.
    Now the reads do not grow with the runs listed, and each run's explanation is explain_run's."""
    from pathlib import Path

    hist = Path(__file__).parent / "data" / "history"
    m.slowest_runs("wordcount", hist, top=1)  # the runtime model fitted and cached before counting
    tables: list[str] = []
    read = io.Store.read

    def counting(self, table, *args, **kwargs):
        tables.append(table)
        return read(self, table, *args, **kwargs)

    monkeypatch.setattr(io.Store, "read", counting)
    few = m.slowest_runs("wordcount", hist, top=3)
    reads_few, tables[:] = tables.count("stages"), []
    found = m.slowest_runs("wordcount", hist, top=50)
    assert (len(few), len(found)) == (3, 24)
    assert tables.count("stages") == reads_few == 3  # the features, the recovery check, the windows
    monkeypatch.setattr(io.Store, "read", read)
    assert [r.run_id for r in few] == [r.run_id for r in found[:3]]
    for r in found:  # each run's windows read alone: the same wall time and warnings
        assert r.error is None and r.explanation.wall_ms > 0
        assert r.explanation == m.explain_run(r.run_id, hist)


def test_a_run_far_shorter_than_the_training_runs_gets_no_cause_its_clean_runs_deny():
    """tests/data/history's sort runs last 1-3 s of stage time, under half the shortest run the
    bundled monitor learnt from: its estimate there can say +99 % for a run measured 4 % faster
    than its clean runs. A cause is named only where the clean runs confirm a slowdown."""
    from pathlib import Path

    hist = Path(__file__).parent / "data" / "history"
    model = m.default_model()
    assert model.train_run_ms_ is not None and model.train_run_ms_[0] > 2 * 3000
    denied = m.explain_run("local-1795975877648", hist, model)
    assert denied.too_short and denied.cause_withheld and denied.main_cause is None
    assert denied.degradation < m.CAUSE_MIN_SLOWDOWN <= denied.estimated_degradation
    assert "no cause named: not slower than its clean runs" in denied.summary()
    assert any("is an extrapolation; the job's clean runs show no slowdown" in w for w in denied.warnings)
    confirmed = m.explain_run("local-1795975870108", hist, model)   # +20 % measured, +14 % estimated
    assert confirmed.too_short and not confirmed.cause_withheld and confirmed.main_cause == "cpu"
    assert any("is an extrapolation" in w for w in confirmed.warnings)


def test_runs_of_other_setups_do_not_confirm_a_cause_for_a_short_run(tmp_path):
    """The demo sweeps each setup once, so each run is compared with runs of any setup: their
    difference in executors and size was taken as a confirmed slowdown, and short runs were
    given causes ("+21.5% ... main cause memory") the monitor's model could not support."""
    import shutil
    from pathlib import Path

    from sparkpredict import monitor_baseline as mb
    from sparkpredict import store
    from sparkpredict.store.edit import edit_runs

    hist = tmp_path / "history"
    shutil.copytree(Path(__file__).parent / "data" / "history", hist)
    model = m.default_model()
    rid = "local-1795975922039"  # sort, 2.3 s of stages: +26 % against its setup's runs, cause named
    before = m.explain_run(rid, hist, model)
    assert before.too_short and before.baseline == mb.SAME_SETUP and before.main_cause is not None
    runs = store.open(hist).runs()
    edit_runs(str(hist), mb.same_setup(mb.setups(runs), rid, runs["run_id"]), excluded=True)
    alone = m.explain_run(rid, hist, model)
    assert alone.baseline == mb.ANY_SETUP and alone.degradation >= m.CAUSE_MIN_SLOWDOWN
    assert alone.cause_withheld and alone.main_cause is None
    assert "no cause named: compared only with runs of other setups" in alone.summary()
    assert any("only runs of other setups are there to compare it with" in w for w in alone.warnings)


def test_without_labels_a_run_is_compared_with_its_own_setup_and_bad_arguments_are_refused(tmp_path, capsys):
    """Without labels every other run of the job was "clean", whatever its executor count or
    size: a 1-executor sort run read +32 % "VIOLATED" against runs on 1, 2 and 3 executors of
    four sizes. Its baseline is now the other run of its setup (+3 %); only where none ran that
    setup is it every other run, and the explanation says so."""
    from pathlib import Path

    from sparkpredict.cli import main

    hist = Path(__file__).parent / "data" / "history"
    model = m.default_model(hist)  # a path, as explain_run takes one (it raised AttributeError)
    e = m.explain_run("local-1795975858928", hist, model)
    assert e.degradation == pytest.approx(0.032, abs=0.005) and not e.violated  # was +31.7 %, VIOLATED
    assert (e.baseline, e.clean_runs) == ("same setup", 1)
    assert e.baseline_setup == "1 executor of 1 core, input 8 MB ± 5%, local, 34 tasks ± 1.5x"
    assert not any("other executor counts" in w for w in e.warnings), e.warnings
    assert any("comes from 1 other run of its setup only" in w for w in e.warnings), e.warnings
    assert "+3.2% against its runs of the same setup" in e.summary()
    assert main(["explain", "local-1795975858928", "--store", str(hist)]) == 0
    assert "(median of 1 other run of the job with its setup: 1 executor of 1 core, input 8 MB ± 5%, local, " \
           "34 tasks ± 1.5x, per stage)" in capsys.readouterr().out
    # a local[3] sweep run: 3 executors of one thread each, as runs and simulate say (it read
    # "3 executors of 3 cores": the store's executor_cores is the driver's 3 threads)
    three = m.explain_run("local-1795976284734", hist, model)
    assert three.baseline_setup.startswith("3 executors of 1 core, "), three.baseline_setup
    # without the other 1-executor 8 MB run: too few of its setup, so the job's 22 other runs, said
    sort = io.open(hist).runs().query("job == 'sort'")["run_id"]
    st = _history_subset(tmp_path, [r for r in sort if r != "local-1795975907870"])
    wide = m.explain_run("local-1795975858928", st, model)
    assert (wide.baseline, wide.clean_runs) == ("any setup", 22) and wide.violated
    (said,) = [w for w in wide.warnings if "ran this one's setup" in w]
    assert said.startswith("no other run of job 'sort' ran this one's setup (1 executor of 1 core, input 8 MB")
    assert "which ran other executor counts (2, 3; this run: 1)" in said and "other input sizes" in said
    assert "against its runs of any setup" in wide.summary()
    assert main(["explain", "local-1795975858928", "--store", str(st.path)]) == 0
    assert "(median of 22 other runs of the job on any setup, none on its own (see the warning), per stage)" \
        in capsys.readouterr().out
    for bad in ({"threshold": 10}, {"threshold": -1}, {"threshold": "lots"}, {"top_stages": -1}, {"top_stages": 0}):
        with pytest.raises(InputError):
            m.explain_run("local-1795975858928", hist, model, **bad)


def test_same_setup_means_same_executors_and_cores_and_a_size_within_the_tolerance():
    from sparkpredict import monitor_baseline as mb

    tol = mb.SIZE_TOLERANCE
    runs = pd.DataFrame({
        "run_id": ["me", "in", "edge", "out", "cores", "execs", "max", "nosize"],
        "executors_requested": [2, 2, 2, 2, 2, 3, None, 2],
        "executors_max": [2, 2, 2, 2, 2, 3, 2, 2],
        "executor_cores": [4, 4, 4, 4, 2, 4, 4, 4],
        "input_bytes": [1e9, 1e9 * (1 + 0.8 * tol), 1e9 * (1 - 0.99 * tol), 1e9 * (1 + 1.2 * tol), 1e9, 1e9, 1e9, 0]})
    table = mb.setups(runs)
    # the count asked for, else the count that ran ("max" ran 2 executors, none asked)
    assert sorted(mb.same_setup(table, "me", runs["run_id"])) == ["edge", "in", "max"]
    b = mb.choose(table, "me", runs["run_id"])
    assert (b.kind, b.run_ids, b.setup) == ("same setup", frozenset({"edge", "in", "max"}),
                                            "2 executors of 4 cores, input 1 GB ± 5%")
    # an unrecorded size (0: not declared) matches only runs that did not record it either
    alone = mb.choose(table, "nosize", runs["run_id"])
    assert alone.kind == "any setup" and alone.same_setup_runs == 0 and "nosize" not in alone.run_ids
    assert alone.setup == "2 executors of 4 cores, input size unknown"
    assert mb.other_setups(runs, "me", ["cores", "execs", "out"]) == \
        "other executor counts (3; this run: 2), other cores per executor (2; this run: 4) and other input sizes"


def test_a_training_store_without_clean_runs_is_a_clear_error_and_not_trained_on(tmp_path):
    plan = [(f"cpu{i}", f"cpu:{1 + i % 2}", f, "cpu") for i, f in enumerate([1.3, 1.6, 2.0, 1.4, 1.8, 1.5])]
    st = _store_with_runs(tmp_path / "noclean", plan)
    with pytest.raises(DegenerateDataError, match="no labelled run .* has a clean run of its job"):
        m.fit_monitor(st)
    # interfered runs of one job and clean runs of another teach nothing: the bundled dataset serves
    clean = [(f"clean{i}", "none", 1.0, "none") for i in range(3)]
    apart = _store_with_runs(tmp_path / "apart", plan + clean, jobs={f"clean{i}": "wordcount" for i in range(3)})
    together = _store_with_runs(tmp_path / "together", plan + clean)
    bundled = m.default_model().train_run_ms_
    assert m.default_model(apart).train_run_ms_ == bundled
    assert m.default_model(together).train_run_ms_ != bundled  # its own runs: same job


def test_slowest_runs_of_runs_without_input_sizes_is_a_clear_error(tmp_path, capsys):
    """Three real event logs whose apps are all called 'Spark shell': no input size recorded."""
    from pathlib import Path

    from sparkpredict.capture.eventlog_ingest import ingest_event_logs
    from sparkpredict.cli import main

    logs = Path(__file__).parent / "data" / "eventlogs"
    ingest_event_logs(logs, tmp_path / "s")
    assert m.slowest_runs("Spark shell", tmp_path / "s") == []
    assert main(["explain", "--job", "Spark shell", "--store", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert "no run of job 'Spark shell' can be set against its runtime model" in err
    # their logs are written: what can still be done, not a setting for them
    assert "ingested from event logs that declared no input size" in err, err
    assert "fix: explain its runs one at a time" in err and "sparkpredict ingest LOG... --job NAME" in err


def _history_subset(tmp_path, run_ids):
    """A store holding only these runs of tests/data/history (all their rows)."""
    from pathlib import Path

    src = io.open(Path(__file__).parent / "data" / "history")
    dst = io.open(tmp_path / "store", create=True)
    dst.append({t: src.read(t, form="arrow", run_ids=run_ids) for t in ("runs", "stages", "tasks", "executors")})
    return dst


def test_a_failed_run_is_explained_from_its_completed_stages(tmp_path, capsys):
    """A run recorded as failed (its stages completed, then the application failed) is set
    against the job's clean runs stage by stage, says that it failed, and is no clean run."""
    import pyarrow as pa

    from sparkpredict.cli import main

    ids = ["local-1795975705584", "local-1795975713600", "local-1795975719237", "local-1795975774815",
           "local-1795975776518", "local-1795975778280"]
    st = _history_subset(tmp_path, ids)
    row = st.read("runs", form="arrow", run_ids=[ids[0]])
    for col, value in (("status", pa.array(["failed"])), ("error_message", pa.array(["job 3 failed"])),
                       ("updated_ms", pa.array([row["updated_ms"][0].as_py() + 1], pa.int64()))):
        row = row.set_column(row.schema.get_field_index(col), col, value)
    st.append({"runs": row})  # the latest run row wins
    e = m.explain_run(ids[0], st)  # against the other run of its setup (1 executor, 4 MB)
    assert (e.baseline, e.clean_runs) == ("same setup", 1) and e.degradation is not None and e.stages
    assert "the run failed: only its completed stages are compared" in e.warnings[0]
    assert ids[0] not in set(m.labelled_stages(st, ["wordcount"])["run_id"])  # never a baseline
    other = m.explain_run(ids[3], st)  # the failed run was the only other one of its setup
    assert (other.baseline, other.clean_runs) == ("any setup", 4)  # and is none of its clean runs
    assert any("no other run of job 'wordcount' ran this one's setup" in w for w in other.warnings)
    assert main(["explain", ids[0], "--store", str(st.path)]) == 0
    assert "warning: the run failed" in capsys.readouterr().out


def test_explain_job_with_too_few_runs_ranks_them_by_the_replay_of_their_other_runs(tmp_path, capsys):
    """Three runs: too few for the whole-job model, so the job's model is the replay. In sample
    it predicted a run by replaying the nearest recorded run, itself or another of its setup, so
    `explain --job` showed no ratio while the report and the advice showed 1.40x for one. Both
    now read the replay's leave-one-out ratios: each run against the replay of the others."""
    from sparkpredict.advice_source import HistorySource
    from sparkpredict.cli import main

    ids = ["local-1795975705584", "local-1795975774815", "local-1795975776518"]
    st = _history_subset(tmp_path, ids)
    found = m.slowest_runs("wordcount", st)
    ratios = [r.runtime_over_model for r in found]
    assert len(found) == 3 and found[0].out_of_fold and ratios == sorted(ratios, reverse=True)
    assert found[0].run_id == "local-1795975705584"  # the slowed one first
    assert found[0].explanation.degradation == max(r.explanation.degradation for r in found)
    src = HistorySource.resolve("wordcount", store=st)
    assert src.model_name == "replay" and src.runs_above_model(k=3, min_ratio=0.0) == \
        [(r.run_id, r.runtime_over_model) for r in found]  # what the report and the advice name
    assert main(["explain", "--job", "wordcount", "--store", str(st.path)]) == 0
    out = capsys.readouterr().out
    assert "(recorded runtime / the model's prediction for it, fitted without it)" in out
    assert f"  {ratios[0]:5.2f}x  run local-1795975705584" in out


def test_explain_job_header_says_in_sample_when_the_model_kept_no_out_of_fold_ratios(capsys, monkeypatch):
    """A model saved before out-of-fold predictions were kept is compared in sample."""
    from pathlib import Path

    from sparkpredict.advice_source import HistorySource
    from sparkpredict.cli import main

    hist = Path(__file__).parent / "data" / "history"
    resolve = HistorySource.resolve.__func__

    def without_oof(cls, job, **kw):
        src = resolve(cls, job, **kw)
        model = type("Old", (), {"predict": src.model.predict, "name_": src.model_name, "n_runs_": src.n_runs})()
        return HistorySource(job, model, src.runs)

    monkeypatch.setattr(HistorySource, "resolve", classmethod(without_oof))
    found = m.slowest_runs("wordcount", hist, top=2)
    assert not found[0].out_of_fold and found[0].runtime_over_model is not None
    assert main(["explain", "--job", "wordcount", "--top", "2", "--store", str(hist)]) == 0
    out = capsys.readouterr().out
    assert "the model's in-sample prediction for it" in out and "fitted without it" not in out
    assert f"  {found[0].runtime_over_model:5.2f}x  run {found[0].run_id}" in out


def test_explain_job_says_which_of_the_jobs_runs_it_could_not_rank(tmp_path, capsys, monkeypatch):
    """`explain --job wordcount --top 50` listed 23 of the job's 27 runs and said nothing of the
    others: two ingested from event logs that declared no size (the runtime model is fitted
    without them), one excluded from training, one failed. Now one line counts them by why and
    names them, and --json holds them."""
    import shutil
    from pathlib import Path

    from sparkpredict.capture.eventlog_ingest import ingest_event_logs
    from sparkpredict.cli import main
    from sparkpredict.store.edit import edit_runs

    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    data = Path(__file__).parent / "data"
    path = tmp_path / "store"
    shutil.copytree(data / "history", path)
    logs = [data / "eventlogs" / "spark4" / n for n in ("local-1795969295677.zstd", "local-1795969305651.lz4")]
    assert ingest_event_logs([str(p) for p in logs], store=path, job="wordcount").files_failed == 0
    edit_runs(path, "local-1795975705584", excluded=True)
    st = io.open(path)
    one = st.runs().query("run_id == 'local-1795975713600'")
    st.append({"runs": one.assign(run_id="failed-1", app_id="failed-1", status="failed",
                                  start_ms=one.start_ms + 10**7, updated_ms=one.updated_ms + 10**7)})
    found = m.slowest_runs("wordcount", path, top=50)
    left = m.unranked_runs("wordcount", path)
    assert len(found) == 23
    assert left == {"no_size": ["local-1795969295677", "local-1795969305651"], "no_ratio": [],
                    "excluded": ["local-1795975705584"], "not_succeeded": ["failed-1"]}, left
    runs = st.runs()
    assert {r.run_id for r in found} | {r for ids in left.values() for r in ids} == \
        set(runs.loc[runs.job == "wordcount", "run_id"])  # every run of the job, listed or said
    assert main(["explain", "--job", "wordcount", "--top", "50", "--store", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    said = [line for line in out if "cannot be set against its runtime model" in line]
    assert said == [("4 runs of the job cannot be set against its runtime model, so are not ranked here: 2 without "
                    "an input size, executor count or runtime (the runtime model is fitted without them); 1 "
                    "excluded from training (`sparkpredict store edit --exclude`); 1 that did not succeed "
                    "(failed, killed or still running); explain each against the job's clean runs alone "
                    "(sparkpredict explain RUN_ID) (--json lists them under not_ranked)")], out
    assert main(["explain", "--job", "wordcount", "--top", "2", "--store", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["job"] == "wordcount" and len(doc["runs"]) == 2 and doc["not_ranked"] == left
    # a job whose runs are all ranked: no such line, and nothing under not_ranked
    assert main(["explain", "--job", "sort", "--top", "2", "--store", str(path)]) == 0
    assert "cannot be set against" not in capsys.readouterr().out
    assert not any(m.unranked_runs("sort", path).values())


def test_explain_job_says_the_runs_the_model_kept_no_out_of_fold_prediction_for(tmp_path, capsys, monkeypatch):
    """The model keeps out-of-fold ratios for its runs furthest above it only (SLOW_RUNS_KEPT, 50):
    a job with more runs than that listed fewer than a long --top asked for, without a word."""
    from sparkpredict.cli import main
    from sparkpredict.models import job_runs

    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(job_runs, "SLOW_RUNS_KEPT", 5)
    ids = ["local-1795975705584", "local-1795975713600", "local-1795975719237", "local-1795975725787",
           "local-1795975774815", "local-1795975776518", "local-1795975778280", "local-1795975780572"]
    st = _history_subset(tmp_path, ids)
    found = m.slowest_runs("wordcount", st, top=8)
    left = m.unranked_runs("wordcount", st)
    assert len(found) == 5 and len(left["no_ratio"]) == 3 and not left["no_size"] + left["excluded"]
    assert {r.run_id for r in found} | set(left["no_ratio"]) == set(ids)
    assert main(["explain", "--job", "wordcount", "--top", "8", "--store", str(st.path)]) == 0
    said = [line for line in capsys.readouterr().out.splitlines() if "cannot be set against" in line]
    assert len(said) == 1 and said[0].startswith(
        "3 runs of the job cannot be set against its runtime model, so are not ranked here: 3 without an "
        "out-of-fold prediction"), said
    assert said[0].endswith(": " + " ".join(left["no_ratio"]))


def test_local_runs_of_other_thread_counts_are_other_setups():
    """local[N] reads as N one-core executors here as in the runs table: `explain` had compared a
    local[2] run with "runs of its setup: 1 executor of 1 core", local[1] runs among them."""
    from sparkpredict import monitor_baseline as mb

    runs = pd.DataFrame({
        "run_id": ["two", "two-again", "one"], "master": ["local[2]", "local[2]", "local[1]"],
        "status": ["succeeded"] * 3, "executors_requested": [1] * 3, "executor_cores": [2, 2, 1],
        "input_bytes": [4e6] * 3, "num_tasks": [18] * 3, "num_failed_tasks": [0] * 3})
    table = mb.setups(runs)
    assert list(table.loc[["two", "one"], "executors"]) == [2, 1]
    assert list(table.loc[["two", "one"], "cores"]) == [1, 1]
    assert mb.same_setup(table, "two", runs["run_id"]) == ["two-again"]
    assert mb.same_setup(table, "one", runs["run_id"]) == []
    assert mb.describe(table, "two").startswith("2 executors of 1 core")


def test_same_setup_means_the_same_master_kind_and_a_task_count_within_the_ratio():
    """A 3 s local[1] wordcount read -82 % against two 55 s local-cluster runs of 604 tasks (a
    jobs/ script on Spark's defaults), as "its runs of the same setup": executors, cores and
    size alone matched."""
    from sparkpredict import monitor_baseline as mb

    assert [mb.master_kind(x) for x in ("local[1]", "local", "local[*]", "local-cluster[2,1,1024]", "yarn",
                                        "k8s://https://h:6443", "spark://h:7077", None, float("nan"), "")] == \
        ["local", "local", "local", "local-cluster", "yarn", "k8s", "spark", None, None, None]
    ratio = mb.TASKS_RATIO
    runs = pd.DataFrame({
        "run_id": ["me", "twin", "cluster", "defaults", "near", "far", "failed", "nomaster"],
        "master": ["local[1]", "local[1]", "local-cluster[1,1,1024]", "local[1]", "local[1]", "local[1]",
                   "local[1]", None],
        "status": ["succeeded"] * 6 + ["failed", "succeeded"],
        "executors_requested": [1] * 8, "executor_cores": [1] * 8, "input_bytes": [4e6] * 8,
        # near: retried tasks are not the job's work (18 + 3 failed)
        "num_tasks": [18, 18, 18, 604, 21, int(18 * ratio) + 1, 5, 18],
        "num_failed_tasks": [0, 0, 0, 0, 3, 0, 1, 0]})
    table = mb.setups(runs)
    # a failed run has no whole task count: it is not told apart by it (its stages are compared)
    assert sorted(mb.same_setup(table, "me", runs["run_id"])) == ["failed", "near", "twin"]
    assert sorted(mb.same_setup(table, "failed", runs["run_id"])) == ["defaults", "far", "me", "near", "twin"]
    assert mb.same_setup(table, "nomaster", runs["run_id"]) == []  # an unrecorded master: one of its own
    alone = mb.choose(table, "cluster", runs["run_id"])
    assert alone.kind == "any setup" and alone.same_setup_runs == 0
    assert mb.other_setups(runs, "me", ["cluster", "defaults", "far"]) == \
        f"other masters (local-cluster; this run: local) and other task counts ({int(18 * ratio) + 1}, 604; this run: 18)"
    # a table without these columns (an older caller's) compares as before
    assert sorted(mb.same_setup(table.drop(columns=["master", "tasks"]), "me", runs["run_id"])) == \
        ["cluster", "defaults", "failed", "far", "near", "nomaster", "twin"]


def test_explain_compares_a_run_with_runs_of_its_master_and_task_count_only(tmp_path):
    """The other 1-executor 8 MB sort run of tests/data/history, recorded on local-cluster or
    with 604 tasks, is no longer the run's "same setup": it falls back to the 23 other runs, and says why."""
    from pathlib import Path

    import pyarrow as pa

    sort = io.open(Path(__file__).parent / "data" / "history").runs().query("job == 'sort'")["run_id"].tolist()
    me, twin = "local-1795975858928", "local-1795975907870"
    for col, value, differs in (("master", pa.array(["local-cluster[1,1,1024]"]), "other masters (local-cluster"),
                                ("num_tasks", pa.array([604], pa.int64()), "604; this run: 34)")):
        st = _history_subset(tmp_path / col, sort)
        before = m.explain_run(me, st)
        assert (before.baseline, before.clean_runs) == ("same setup", 1)
        row = st.read("runs", form="arrow", run_ids=[twin])
        for c, v in ((col, value), ("updated_ms", pa.array([row["updated_ms"][0].as_py() + 1], pa.int64()))):
            row = row.set_column(row.schema.get_field_index(c), c, v)
        st.append({"runs": row})
        e = m.explain_run(me, st)
        assert (e.baseline, e.clean_runs) == ("any setup", 23), (col, e.baseline)  # every other run
        (said,) = [w for w in e.warnings if "ran this one's setup" in w]
        assert differs in said, said


def test_a_near_tie_is_said_and_a_run_not_slowed_gets_no_culprit_line(capsys):
    """ "main cause: memory (47%)" was printed above cpu's 45 %, and "who took the cores Spark
    waited for: cpu 92%" on clean runs that waited for nothing (the classifier's prior)."""
    import dataclasses

    from sparkpredict.cli import main

    store = str(m.DEFAULT_TRAINING_STORE)
    quiet = "app-20261130022145-0000"  # a clean run, -1.3 %: host counters, nothing waited
    e = m.explain_run(quiet, store)
    assert e.culprit and e.main_cause is None and e.degradation < m.CAUSE_MIN_SLOWDOWN
    assert main(["explain", quiet, "--store", store]) == 0
    assert "who took the cores" not in capsys.readouterr().out
    net = m.explain_run("app-20261130022624-0000", store)  # the network run: slowed, named
    assert net.main_cause and net.runner_up() == ""  # a clear lead: nothing beside it
    tie = dataclasses.replace(net, main_cause="memory", main_share=0.47,
                              shares={"cpu": 0.45, "memory": 0.47, "network": 0.05, "disk": 0.03})
    assert "main cause memory (47% of the slowdown, nearly tied with cpu (45%))" in tie.summary()
    apart = dataclasses.replace(tie, main_share=0.6, shares={"cpu": 0.3, "memory": 0.6, "network": 0.1})
    assert apart.runner_up() == "" and "nearly tied" not in apart.summary()
