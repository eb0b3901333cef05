"""`sparkpredict explain` and the monitor where a demanding user found them wanting: errors that
--json printed as an empty list, one label that threw a job's history away, thresholds checked
three ways, a training store too small to learn from, and fixes that could not be acted on.
No JVM: synthetic stores and committed event logs."""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from test_monitor import _store_with_runs

from sparkpredict import monitor as m
from sparkpredict.errors import DegenerateDataError, InputError

LOGS = Path(__file__).parent / "data" / "eventlogs"
#: five runs of one generated application, none declaring an input size (data made in memory)
GEN = sorted(p for p in (LOGS / "spark4").iterdir() if p.is_file())


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A small estimator of synthetic runs: the tests here are about baselines and errors."""
    plan = [(f"clean{i}", "none", 1.0, "none") for i in range(3)]
    plan += [(f"cpu{i}", "cpu:1", f, "cpu") for i, f in enumerate([1.3, 1.6, 2.0, 1.5, 1.8])]
    return m.fit_monitor(_store_with_runs(tmp_path_factory.mktemp("train") / "s", plan),
                         autoencoder=False, n_estimators=50)


def _ingested(path, logs, job):
    from sparkpredict.capture.eventlog_ingest import ingest_event_logs

    report = ingest_event_logs([str(p) for p in logs], store=path, job=job)
    assert report.files_failed == 0
    return path


# ---- 1. --job --json: an error, not an empty list ----------------------------------------------
def test_explain_job_json_with_no_rankable_run_is_an_error_on_stdout_and_exit_2(tmp_path, capsys):
    from sparkpredict.cli import main

    store = _ingested(tmp_path / "s", GEN, "gen")
    assert main(["explain", "--job", "gen", "--store", str(store), "--json"]) == 2  # was 0, "[]"
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"error", "fix"}, out
    assert out["error"].startswith("no run of job 'gen' can be set against its runtime model")
    # 5. a log already written cannot be given a size: say so, and what can still be done
    assert "5 runs were ingested from event logs that declared no input size" in out["error"], out
    assert "sparkpredict explain RUN_ID" in out["fix"] and "A written log cannot be given one" in out["fix"]
    assert "--conf spark.sparkpredict.inputBytes" not in out["fix"], out
    assert main(["explain", "--job", "gen", "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert "error: no run of job 'gen'" in err and "fix: explain its runs one at a time" in err


# ---- 2. one labelled run, or an empty label, does not throw the unlabelled history away --------
def _job_with(label, victim_label=None):
    plan = [(f"run{i}", None, 1.0, "none") for i in range(5)]
    plan += [("bubbled", label, 1.6, "cpu"), ("victim", victim_label, 1.7, "cpu")]
    return plan


def test_one_labelled_run_leaves_the_unlabelled_runs_as_the_baseline(tmp_path, model):
    st = _store_with_runs(tmp_path / "s", _job_with("cpu:1"))
    e = m.explain_run("victim", st, model)  # was "no other clean run of job 'etl' to compare it with"
    # its 5 unlabelled runs; never the run labelled as interfered with
    assert (e.baseline, e.clean_runs) == ("same setup", 5)
    assert e.degradation == pytest.approx(0.7, abs=0.1) and e.violated
    (said,) = [w for w in e.warnings if "labelled" in w]
    assert said.startswith("1 run of job 'etl' is labelled spark.sparkpredict.interference, but no "
                           "other run is labelled none"), said
    assert "--conf spark.sparkpredict.interference=none" in said
    # the labelled run itself is explained the same way: against the 6 unlabelled runs
    b = m.explain_run("bubbled", st, model)
    assert b.clean_runs == 6 and b.degradation == pytest.approx(0.6, abs=0.1) and b.label == "cpu:1"
    # where one other run is labelled none, that run is the baseline, as before
    labelled = _store_with_runs(tmp_path / "l", _job_with("cpu:1") + [("calm", "none", 1.0, "none")])
    e2 = m.explain_run("victim", labelled, model)
    assert (e2.baseline, e2.clean_runs) == ("labelled", 1) and not any("labelled spark" in w for w in e2.warnings)


@pytest.mark.parametrize("blank", ["", "  "])
def test_an_empty_label_is_no_label(tmp_path, model, blank):
    st = _store_with_runs(tmp_path / "s", _job_with(blank))
    e = m.explain_run("victim", st, model)
    # the job has no labels: the blank run is one of its runs like the others
    assert (e.baseline, e.clean_runs) == ("same setup", 6) and e.label is None
    assert not any("labelled" in w for w in e.warnings), e.warnings
    assert m.labelled_stages(st)["label"].isna().all()


def test_runs_compared_with_unlabelled_runs_are_not_training_data(tmp_path):
    # interfered runs whose job has only unlabelled runs besides: explained, but nothing to learn
    plan = [(f"run{i}", None, 1.0, "none") for i in range(3)]
    plan += [(f"cpu{i}", "cpu:1", f, "cpu") for i, f in enumerate([1.3, 1.6, 2.0, 1.5, 1.8])]
    st = _store_with_runs(tmp_path / "s", plan)
    with pytest.raises(DegenerateDataError, match="no labelled run .* has a clean run of its job"):
        m.fit_monitor(st)


# ---- 3. one rule for the threshold and the counts, errors naming the flag ----------------------
@pytest.mark.parametrize("argv, said", [
    (["--threshold", "5"], "--threshold 5 is not a fraction between 0 and 1"),  # the CLI took up to 10
    (["--threshold", "1"], "--threshold 1 is not a fraction between 0 and 1"),
    (["--threshold", "0"], "--threshold 0 is not a fraction between 0 and 1"),
    (["--stages", "0"], "--stages 0 is not a whole number of at least 1"),  # named top_stages
    (["--top", "0"], "--top 0 is not a whole number of at least 1"),
])
def test_bad_options_are_refused_naming_the_flag(tmp_path, capsys, argv, said):
    from sparkpredict.cli import main

    st = _store_with_runs(tmp_path / "s", [("a", None, 1.0, "none"), ("b", None, 1.0, "none")])
    assert main(["explain", "a", "--store", str(st.path), *argv]) == 2
    err = capsys.readouterr().err
    # not the Python arguments' names, as explain_run gave them
    assert f"error: {said}" in err and "error: threshold" not in err and "top_stages" not in err, err


def test_the_api_applies_the_same_rule_to_explain_run_and_slowest_runs(tmp_path):
    nowhere = tmp_path / "none"  # the arguments are checked before any store is read
    for bad in (1, 2, 0, -0.1, float("nan"), "lots", "150%", True):  # "0.1" and "10%" are read
        with pytest.raises(InputError, match="is not a fraction between 0 and 1"):
            m.slowest_runs("etl", nowhere, threshold=bad)  # was not checked at all
        with pytest.raises(InputError, match=r"^threshold .* is not a fraction between 0 and 1"):
            m.explain_run("a", nowhere, threshold=bad)
    with pytest.raises(InputError) as exc:
        m.explain_run("a", nowhere, threshold=10)
    assert "10 would be 1000% slower; for 10% give 0.1" in exc.value.fix
    with pytest.raises(InputError, match=r"^top_stages 0 is not a whole number"):
        m.explain_run("a", nowhere, top_stages=0)
    with pytest.raises(InputError, match=r"^top 0 is not a whole number"):
        m.slowest_runs("etl", nowhere, top=0)


# ---- 4. a training store too small is refused, and pandas says nothing -------------------------
def test_a_training_store_with_too_few_interfered_runs_is_refused(tmp_path, capsys):
    from sparkpredict.cli import main

    plan = [(f"clean{i}", "none", 1.0, "none") for i in range(4)]
    plan += [("cpu0", "cpu:2", 1.8, "cpu"), ("cpu1", "cpu:1", 1.4, "cpu")]
    st = _store_with_runs(tmp_path / "s", plan)
    with pytest.raises(DegenerateDataError, match="2 interfered runs and 4 clean runs of jobs that have "
                                                  "both, where it needs at least 5 and 2") as exc:
        m.fit_monitor(st)  # was trained on, and gave a wild estimate
    assert exc.value.fix.startswith("record 3 more interfered runs of those jobs")
    assert "leave the training store out" in exc.value.fix
    assert main(["explain", "cpu0", "--store", str(st.path), "--training-store", str(st.path)]) == 2
    assert "too few labelled runs" in capsys.readouterr().err
    # the same minimum decides whether default_model trains on a store: it does not here
    assert m.default_model(st).train_run_ms_ == m.default_model().train_run_ms_


def test_comparing_runs_with_and_without_a_baseline_warns_nothing(tmp_path, model):
    # a run without a baseline has all-NaN baseline columns; pandas's FutureWarning about
    # concatenating them reached explain's users
    plan = [(f"run{i}", None, 1.0, "none") for i in range(3)] + [("solo", None, 1.0, "none")]
    st = _store_with_runs(tmp_path / "s", plan, jobs={"solo": "other"})
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        df = m.labelled_stages(st)
        m.explain_run("run0", st, model)
    assert df["expected_ms"].dtype == float and df.loc[df["run_id"] == "solo", "expected_ms"].isna().all()


# ---- 5. fixes that can be acted on -------------------------------------------------------------
def test_an_ingested_run_of_another_application_is_told_to_take_its_own_job_name(tmp_path, model):
    # an unrelated application's log under the same name: no stage in common
    store = _ingested(tmp_path / "s", [LOGS / "sparklens_local-1532512550423.json", *GEN[:2]], "Spark shell")
    with pytest.raises(DegenerateDataError) as exc:
        m.explain_run("local-1532512550423", store, model)
    assert "none of its 2 stages matches a stage of the 2 other runs of job 'Spark shell'" in exc.value.message
    assert exc.value.fix.startswith("give each application its own job name"), exc.value.fix
    # a stored run is moved with store edit (it said to ingest again into a new store)
    # with the store it is in: run as given, it went to the default store
    assert f"`sparkpredict store edit local-1532512550423 RUN_ID... --store {store} --job NAME`" in exc.value.fix
    assert "interference=none" not in exc.value.fix  # a written log takes no label
    from sparkpredict.store import edit_runs

    edit_runs(store, ["local-1532512550423"], job="sparklens")  # the fix, followed
    with pytest.raises(DegenerateDataError) as exc:
        m.explain_run("local-1532512550423", store, model)
    assert "no other clean run of job 'sparklens'" in exc.value.message
    lone = _ingested(tmp_path / "lone", GEN[:1], "gen")
    with pytest.raises(DegenerateDataError) as exc:
        m.explain_run(GEN[0].name.split(".")[0], lone, model)
    assert "no other clean run of job 'gen'" in exc.value.message
    assert f"sparkpredict ingest LOG... --store {lone} --job gen" in exc.value.fix
    assert "interference=none" not in exc.value.fix


def test_a_recorded_run_of_another_application_is_told_to_set_its_job_name(tmp_path, model):
    plan = [(f"clean{i}", "none", 1.0, "none") for i in range(3)] + [("alien", "cpu:1", 1.5, "cpu")]
    st = _store_with_runs(tmp_path / "s", plan, names={"alien": ["read at other.py:1", "save at other.py:5"]})
    with pytest.raises(DegenerateDataError) as exc:
        m.explain_run("alien", st, model)
    assert "--conf spark.sparkpredict.job=NAME" in exc.value.fix and "sparkpredict ingest" not in exc.value.fix


def test_a_flag_of_the_other_form_is_refused_not_ignored(tmp_path, capsys):
    """`explain RUN --top 3` and `explain --job J --stages 5` exited 0, the flag ignored."""
    from sparkpredict.cli import main

    st = _store_with_runs(tmp_path / "s", [("a", None, 1.0, "none"), ("b", None, 1.0, "none")])
    assert main(["explain", "a", "--top", "3", "--store", str(st.path)]) == 2
    err = capsys.readouterr().err
    assert "error: --top counts the runs of --job J" in err and "sparkpredict explain --job J --top 3" in err
    assert main(["explain", "--job", "etl", "--stages", "5", "--store", str(st.path)]) == 2
    err = capsys.readouterr().err
    assert "error: --stages lists the stages of one run" in err and "explain RUN_ID --stages 5" in err


def test_a_bad_training_store_is_named_as_that_flag(tmp_path, capsys):
    from sparkpredict.cli import main

    st = _store_with_runs(tmp_path / "s", [("a", None, 1.0, "none"), ("b", None, 1.0, "none")])
    afile = tmp_path / "afile"
    afile.write_text("x")
    for bad in (afile, tmp_path / "missing"):
        assert main(["explain", "a", "--store", str(st.path), "--training-store", str(bad)]) == 2
        err = capsys.readouterr().err
        assert "error: --training-store: " in err and str(bad) in err, err
        assert "fix: give the folder of a store that holds labelled runs (--training-store T)" in err, err


def test_stage_times_under_a_tenth_of_a_second_are_in_milliseconds():
    from sparkpredict.cli.explain import _stage_time

    assert [_stage_time(x) for x in (3.4, 45.2, 99.4, 2500)] == ["3ms", "45ms", "99ms", "2.5s"]


def test_explain_job_of_one_ingested_run_without_a_size_says_it_has_one_run(tmp_path, capsys):
    """Its fix said to explain the runs one at a time, which then failed: there is no other run."""
    from sparkpredict.cli import main

    store = _ingested(tmp_path / "s", GEN[:1], "gen")
    assert main(["explain", "--job", "gen", "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert "its one run was ingested from an event log that declared no input size" in err
    assert f"fix: ingest event logs of other runs of the same application under its job name " \
           f"(sparkpredict ingest LOG... --store {store} --job gen)" in err


def test_explain_job_whose_runs_are_other_applications_gives_their_fix(tmp_path, capsys):
    """"record another run undisturbed" contradicted the error: the runs were other applications."""
    import shutil

    from sparkpredict import store as store_mod
    from sparkpredict.cli import main
    from sparkpredict.store import edit_runs

    path = tmp_path / "h"
    shutil.copytree(Path(__file__).parent / "data" / "history", path)
    runs = store_mod.open(path).runs()
    one_each = [runs[runs.job == j].run_id.iloc[0] for j in ("sort", "sqljoin")]
    edit_runs(path, one_each, job="mix")
    assert main(["explain", "--job", "mix", "--store", str(path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert "another application under the same job name" in err[0]
    assert err[1].startswith("fix: give each application its own job name"), err[1]


def test_cpu_named_without_host_evidence_says_it_is_the_default():
    """The test history has no host samples: cpu was named with nothing to say that it was only
    the default (under every kind of neighbour, tasks mostly wait for a core)."""
    e = m.explain_run("local-1795975725787", Path(__file__).parent / "data" / "history")
    assert e.main_cause == "cpu" and e.culprit is None and e.footprint is None
    assert any(w.startswith("cpu is named by default: the run has no host samples") for w in e.warnings)
