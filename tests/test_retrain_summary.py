"""What a retrain reports, on both paths, without a JVM: which models it committed, which it
skipped because their runs cannot support them yet (a job too young to fit: no error), which
failed with an error, and the exit status that follows.

A store of ingested event logs (every job too young for a whole-job model, 8 stage models fitted)
said "refit 0 of 9 job(s) ...; 0 unchanged, 9 failed", each reason led by an internal class name
("DegenerateDataError: ..."), and exited 1; ``--json`` gave ``seconds`` to the millisecond,
``jobs/retrain.py`` to 0.1 s.
"""
from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from sparkpredict import fitting, store
from sparkpredict import registry as R
from sparkpredict import retrain as RT
from sparkpredict import retrain_plan as RP
from sparkpredict.cli.retrain import report_lines, summary

HISTORY = Path(__file__).parent / "data" / "history"
FIX_FINISH = "record a run of the job that finishes"


def _job_script():
    spec = importlib.util.spec_from_file_location("retrain_job", Path(__file__).resolve().parents[1] / "jobs" / "retrain.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ---- the reason of a model not refit ----------------------------------------------------------
@pytest.mark.parametrize(("err", "error_type", "want"), [
    # as fit_group_safe words it: sparkpredict's own class name dropped, the fix kept
    (f"DegenerateDataError: no succeeded run (1 incomplete) (fix: {FIX_FINISH})", None,
     ("DegenerateDataError", f"no succeeded run (1 incomplete) (fix: {FIX_FINISH})")),
    ("ModelError: the fit diverged", None, ("ModelError", "the fit diverged")),
    # a foreign error keeps its name: it is all that says what went wrong
    ("ValueError: Input contains NaN", None, ("ValueError", "ValueError: Input contains NaN")),
    # a record of a failed fit keeps the reason and the class apart
    ("only 2 usable runs (of 2)", "DegenerateDataError", ("DegenerateDataError", "only 2 usable runs (of 2)")),
    ("no model", None, (None, "no model")),
    (None, None, (None, "")),
])
def test_a_fit_error_is_its_class_and_the_reason_to_show(err, error_type, want):
    assert RP._fit_error(err, error_type) == want


def test_only_a_shortage_of_runs_is_a_skip():
    assert RP._skipped_error("DegenerateDataError")
    for other in ("ModelError", "InputError", "ValueError", None):
        assert not RP._skipped_error(other), other


# ---- the report, from a result --------------------------------------------------------------
def _ingested_store_result(**kw) -> RT.RetrainResult:
    """What a retrain of a store of ingested event logs found (the reviewer's case, shortened)."""
    only = "only 0 usable runs (of 1); a runtime model needs at least 4, and choosing one automatically at least 6; 1 has no positive input_bytes"
    fix = "declare each run's input size"
    failed = {"Databricks Shell": f"no succeeded run (1 incomplete) (fix: {FIX_FINISH})",
              "gen-lz4": f"{only} (fix: {fix})", "gen-zstd": f"{only} (fix: {fix})"}
    args = {"retrain_id": "r1", "fit_path": "local", "n_jobs": 4, "failed": failed, "not_enough_runs": sorted(failed),
            "stage_refit": ["gen-lz4", "gen-zstd", "other"], "stage_skipped": ["Databricks Shell"],
            "snapshot": "part-1.parquet", "seconds": 55.86649}
    return RT.RetrainResult(**{**args, **kw})


def test_the_report_says_what_was_committed_and_what_was_skipped():
    res = _ingested_store_result()
    assert res.exit_code == 0 and res.errors == {} and res.skipped == res.failed
    assert report_lines(res) == [
        ("refit 3 of 4 job(s) on the local path in 55.9 s (0 whole-job models, 3 stage models); "
         "0 unchanged, 3 whole-job models skipped (not enough usable runs), 0 failed"),
        "stage models: 3 refit, 1 job without stage rows to learn from (none recorded, or only of runs that did not succeed)",
        "  skipped: Databricks Shell: no succeeded run (1 incomplete)",
        f"    fix: {FIX_FINISH}",
        # one reason, one line: ingested logs without an input size are many
        ("  skipped: gen-lz4, gen-zstd, each: only 0 usable runs (of 1); a runtime model needs at least 4, and choosing one automatically at least 6; "
         "1 has no positive input_bytes"),
        "    fix: declare each run's input size",
        "registry: part-1.parquet",
    ]
    assert not any("Error" in line for line in report_lines(res))


def test_an_error_fails_the_retrain_beside_models_that_fitted():
    res = _ingested_store_result(refit=["other"])
    res.failed["other (stage model)"] = "ValueError: Input contains NaN"
    assert res.exit_code == 1 and res.errors == {"other (stage model)": "ValueError: Input contains NaN"}
    lines = report_lines(res)
    assert lines[0] == ("refit 3 of 4 job(s) on the local path in 55.9 s (1 whole-job model, 3 stage models); "
                        "0 unchanged, 3 whole-job models skipped (not enough usable runs), 1 stage model failed")
    # errors first: they are what the exit status is about; no fix to give, no fix line
    assert lines[2:4] == ["  failed: other (stage model): ValueError: Input contains NaN",
                          "  skipped: Databricks Shell: no succeeded run (1 incomplete)"]


def test_models_not_tried_again_are_still_skipped_or_still_failing():
    res = _ingested_store_result(still_failing=["Databricks Shell", "gen-lz4", "x"], unchanged=["y"])
    res.failed["x"] = "the fit diverged (fix: look)"
    assert summary(res).endswith(
        "; 1 unchanged, 1 whole-job model skipped (not enough usable runs), 0 failed, 2 still skipped (their runs have not "
        "changed: Databricks Shell, gen-lz4), 1 still failing (its runs have not changed: x)")
    lines = report_lines(res)
    assert "  failed: x: the fit diverged (not tried again until its runs change, or with --force)" in lines
    assert "  skipped: gen-zstd: only 0 usable runs (of 1); a runtime model needs at least 4, and choosing one automatically at least 6; 1 has no positive " \
           "input_bytes" in lines  # not grouped with gen-lz4, which was not tried again
    assert res.exit_code == 1


def test_the_cli_and_the_spark_job_print_the_same_document(monkeypatch, capsys, tmp_path):
    """``retrain --json`` and ``jobs/retrain.py`` print :meth:`RetrainResult.to_dict`: the same keys,
    the same rounding of ``seconds`` (it was 55.866 against 55.9), the same exit status. Both
    run for real on a store that answers without Spark: its models current, then its fits failed."""
    import sys
    import types

    from sparkpredict.cli import main

    class NoSpark:  # neither may start a JVM here: one without the listener's jar breaks later tests
        def __getattr__(self, name):
            pytest.fail(f"started Spark (SparkSession.{name}): the store should have answered")

    fake = types.ModuleType("pyspark.sql")
    fake.SparkSession = NoSpark()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pyspark.sql", fake)
    doc = _ingested_store_result().to_dict()
    assert doc["seconds"] == 55.866 and doc["exit_code"] == 0 and doc["failed"] == {}
    path = tmp_path / "h"
    shutil.copytree(HISTORY, path)
    assert RT.retrain_local(path, stage_models=False).refit == ["sort", "sqljoin", "wordcount"]
    args = ["--store", str(path), "--no-stage-models"]

    def both(rc: int) -> dict:
        assert main(["retrain", *args, "--spark", "--json"]) == rc
        cli = json.loads(capsys.readouterr().out)
        assert _job_script().main(args) == rc
        out, err = capsys.readouterr()
        job = json.loads(out)
        assert err.strip(), "the driver's log says what the CLI says"
        assert cli.keys() == job.keys() and cli["exit_code"] == job["exit_code"] == rc
        for d in (cli, job):
            assert d["seconds"] == round(d["seconds"], 3)
        # what differs: each retrain's id and time. The master is the session's: none started,
        # so null in both (the CLI said local[*], which it had not used)
        assert (cli["master"], job["master"]) == (None, None)
        same = {k for k in cli if k not in ("seconds", "retrain_id", "master")}
        assert {k: cli[k] for k in same} == {k: job[k] for k in same}
        return cli

    current = both(0)
    assert (current["refit"], current["unchanged"], current["spark_started"]) == ([], 3, False)
    new = store.open(path).runs().query("job == 'sort'").tail(1)
    store.open(path).append({"runs": new.assign(run_id="app-sort-new", app_id="app-sort-new",
                                                updated_ms=new.updated_ms + 10**6)})

    def broken(*a, **k):
        raise ValueError("boom")

    monkeypatch.setattr(fitting, "fit_group", broken)
    assert RT.retrain_local(path, stage_models=False).errors == {"sort": "ValueError: boom"}
    failing = both(1)  # the failed fit is not tried again, and still fails the retrain
    assert (failing["still_failing"], failing["spark_started"]) == (["sort"], False)


def test_both_help_texts_document_the_exit_status(capsys):
    from sparkpredict.cli import main

    with pytest.raises(SystemExit):
        main(["retrain", "--help"])
    cli = " ".join(capsys.readouterr().out.split())
    with pytest.raises(SystemExit):
        _job_script().main(["--help"])
    job = " ".join(capsys.readouterr().out.split())
    for text in (cli, job):
        assert "Exit status: 0 when the retrain went through, also when models were skipped" in text
        assert "1 when a model's fit failed with an error" in text and "2 for a mistake" in text


# ---- both paths, on a store ------------------------------------------------------------------
@pytest.fixture
def mixed_store(tmp_path, monkeypatch):
    """The test history with a job too young to fit ("tiny", 2 runs) and a job whose fit raises
    an error ("sqljoin"): two copies, one per path."""
    runs = store.open(HISTORY).runs()
    tiny = runs[runs.job == "sort"].head(2).assign(job="tiny", run_id=["tiny-1", "tiny-2"], app_id=["tiny-1", "tiny-2"])
    paths = []
    for name in ("local", "spark"):
        path = tmp_path / name
        shutil.copytree(HISTORY, path)
        store.open(path).append({"runs": tiny})
        paths.append(path)
    real = fitting.fit_group

    def fit_group(raw, **kw):
        if (raw["job"] == "sqljoin").any():
            raise ValueError("Input contains NaN")
        return real(raw, **kw)

    monkeypatch.setattr(fitting, "fit_group", fit_group)
    return paths


def _spark_path_result(path, force=False) -> RT.RetrainResult:
    """The Spark path's driver on the rows its executors would send back: the fit step's function
    (:func:`retrain_spark._make_udf`, pandas in, pandas out) on each job, committed by
    :func:`retrain_spark._commit_rows`, as :func:`retrain_spark.retrain_spark` does after ``collect``."""
    from sparkpredict import retrain_spark as RS

    st = store.open(path)
    prev, failures = R.read_registry_state(st)
    udf = RS._make_udf(0, "auto", force, RP._prev_state(prev, failures), False)
    runs = st.runs()
    rows = [r for _, g in runs.groupby("job") for r in udf(g).to_dict("records")]
    result = RT.RetrainResult(retrain_id=R.new_retrain_id(), fit_path="spark", n_jobs=0, spark_started=True)
    return RS._commit_rows(st, prev, failures, rows, result, None, "auto")


def _same(res: RT.RetrainResult) -> tuple:
    return (res.n_jobs, res.refit, res.unchanged, res.failed, res.not_enough_runs, res.still_failing,
            res.exit_code, summary(res).split(" path in ")[-1].split("; ", 1)[-1])


def test_both_paths_summarise_a_store_the_same(mixed_store):
    local_path, spark_path = mixed_store
    loc = RT.retrain_local(local_path, stage_models=False)
    assert loc.refit == ["sort", "wordcount"]
    assert list(loc.skipped) == ["tiny"]
    assert loc.skipped["tiny"].startswith("only 2 usable runs (of 2); a runtime model needs at least 4, and choosing one automatically at least 6 (fix: ")
    assert loc.errors == {"sqljoin": "ValueError: Input contains NaN"} and loc.exit_code == 1
    assert summary(loc).endswith("; 0 unchanged, 1 whole-job model skipped (not enough usable runs), 1 whole-job model failed")
    sp = _spark_path_result(spark_path)
    assert _same(sp) == _same(loc)
    # the records of the failures keep the class apart from the reason, on both paths
    for path in (local_path, spark_path):
        _reg, failures = R.read_registry_state(path)
        assert {k: (v["error"], v["error_type"]) for k, v in failures.items()} == {
            ("tiny", "runtime"): (loc.failed["tiny"], "DegenerateDataError"),
            ("sqljoin", "runtime"): ("ValueError: Input contains NaN", "ValueError")}
    # not tried again: still skipped, still failing, the same exit status
    again_loc, again_sp = RT.retrain_local(local_path, stage_models=False), _spark_path_result(spark_path)
    assert again_loc.still_failing == ["sqljoin", "tiny"] and again_loc.exit_code == 1
    assert _same(again_sp) == _same(again_loc)
    assert summary(again_loc).endswith("; 2 unchanged, 0 failed, 1 still skipped (its runs have not changed: "
                                       "tiny), 1 still failing (its runs have not changed: sqljoin)")
    plan = RT.plan_path(local_path, stage_models=False)  # --dry-run tells them apart too
    assert (plan["still_failing"], plan["still_skipped"]) == (["sqljoin", "tiny"], ["tiny"])


def test_a_record_from_before_error_types_is_still_told_apart(mixed_store):
    """A failed fit recorded by an earlier retrain kept the worded error ("DegenerateDataError:
    ...") and no class: read back, it is skipped, and shown without the class name."""
    from sparkpredict import registry_commit as RC

    path = mixed_store[0]
    RT.retrain_local(path, stage_models=False)
    st = store.open(path)
    _reg, failures = R.read_registry_state(st)
    old = {k: v for k, v in failures[("tiny", "runtime")].items() if k != "error_type"}
    old.update(model_kind=R.failed_kind("runtime"), error="DegenerateDataError: only 2 usable runs (of 2) "
                                                          "(fix: record more runs)")
    RC.commit_update(st, [old], R.new_retrain_id())
    again = RT.retrain_local(path, stage_models=False)
    assert again.still_failing == ["sqljoin", "tiny"] and again.not_enough_runs == ["tiny"]
    assert again.failed["tiny"] == "only 2 usable runs (of 2) (fix: record more runs)"
    assert RT.plan_path(path, stage_models=False)["still_skipped"] == ["tiny"]
