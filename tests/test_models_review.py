"""A demanding user's review of fit/predict/evaluate and the stage models: a model file of
another job, impossible queries, a damaged stage model, the combined model's name and grammar."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_hybrid import synthetic_job

from sparkpredict import registry as R
from sparkpredict import registry_commit as RC
from sparkpredict.cli import main
from sparkpredict.errors import InputError, ModelError
from sparkpredict.evaluate import evaluate
from sparkpredict.features.runs import runs_table
from sparkpredict.models.hybrid import JobRuntimeModel
from sparkpredict.models.replay import ReplayRuntimeModel
from sparkpredict.models.stages import StageRuntimeModel
from sparkpredict.store import io as store_io

HISTORY = Path(__file__).parent / "data" / "history"
IMPOSSIBLE = "query column '{}' has NaN, infinite, zero or negative values"
IMPOSSIBLE_FIX = "ask about positive input sizes and executor counts"


def _two_jobs() -> pd.DataFrame:
    return pd.concat([synthetic_job("etl", cliff=False, sizes=(8, 12, 16), execs=(2, 4, 8)),
                      synthetic_job("ml", seed=4, sizes=(8, 12, 16), execs=(2, 4, 8))], ignore_index=True)


# ---- 1. a model file of another job -------------------------------------------------------------
def test_a_model_file_copied_over_another_jobs_is_refused_and_old_files_still_load(tmp_path, capsys):
    _two_jobs().to_csv(tmp_path / "runs.csv", index=False)
    models = tmp_path / "models"
    assert main(["fit", str(tmp_path / "runs.csv"), "--out", str(models), "--kind", "amdahl"]) == 0
    files = json.loads((models / "sparkpredict_models.json").read_text())["jobs"]
    for job, name in files.items():  # each file says whose model it holds
        assert json.loads((models / name).read_text())["job"] == job
    pd.DataFrame({"job": ["etl"], "input_bytes": [10 * 2**30], "executors": [4]}).to_csv(tmp_path / "q.csv", index=False)
    assert main(["predict", str(models), str(tmp_path / "q.csv"), "--out", str(tmp_path / "p.csv")]) == 0
    good = pd.read_csv(tmp_path / "p.csv")["predicted_runtime_s"].iloc[0]

    # a file written before the job was recorded in it loads as it did
    etl = models / files["etl"]
    old = {k: v for k, v in json.loads(etl.read_text()).items() if k != "job"}
    etl.write_text(json.dumps(old))
    assert main(["predict", str(models), str(tmp_path / "q.csv"), "--out", str(tmp_path / "p.csv")]) == 0
    assert pd.read_csv(tmp_path / "p.csv")["predicted_runtime_s"].iloc[0] == good

    # ml's file copied over etl's: refused, naming the file, the job it holds and the fix
    shutil.copyfile(models / files["ml"], etl)
    capsys.readouterr()
    assert main(["predict", str(models), str(tmp_path / "q.csv"), "--out", str(tmp_path / "p2.csv")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (f"error: model file {str(etl)!r} holds the model of job 'ml', not of 'etl' as the "
                      "model index says")
    assert err[1].startswith("fix: refit") and len(err) == 2
    assert not (tmp_path / "p2.csv").exists()


# ---- 2. impossible queries ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def sort_models():
    runs = runs_table(str(HISTORY))
    sort = runs[runs.job == "sort"]
    return (StageRuntimeModel(store=str(HISTORY), n_estimators=5).fit(sort),
            ReplayRuntimeModel(store=str(HISTORY)).fit(sort))


@pytest.mark.parametrize("column, value", [("input_bytes", -5), ("input_bytes", 0), ("input_bytes", np.nan),
                                           ("executors", 0), ("executors", -1)])
def test_stage_and_replay_models_refuse_impossible_queries_as_the_whole_job_model(sort_models, column, value):
    job_model = JobRuntimeModel(kind="amdahl").fit(synthetic_job(cliff=False))
    query = {"job": "sort", "input_bytes": 10**7, "executors": 2, column: value}
    with pytest.raises(InputError) as whole:
        job_model.predict({k: [v] for k, v in query.items() if k != "job"})
    assert whole.value.message == IMPOSSIBLE.format(column) and whole.value.fix == IMPOSSIBLE_FIX
    for model in sort_models:
        for ask in (model.predict, model.predict_interval):
            with pytest.raises(InputError) as got:
                ask(pd.DataFrame({k: [v] for k, v in query.items()}))
            assert (got.value.message, got.value.fix) == (whole.value.message, whole.value.fix)


def test_a_stage_query_without_a_size_is_still_asked_at_the_recorded_runs_size(sort_models):
    for model in sort_models:
        assert np.isfinite(model.predict(pd.DataFrame({"job": ["sort"], "executors": [2]}))).all()


# ---- 3. a damaged stage model -------------------------------------------------------------------
def test_a_corrupt_stage_model_is_one_error_with_a_fix(sort_models, tmp_path):
    doc = json.loads(json.dumps(sort_models[0].to_dict()))
    bad = {k: v for k, v in doc.items() if k != "forests"}
    with pytest.raises(ModelError) as got:
        StageRuntimeModel.from_dict(bad, store=str(HISTORY))
    assert got.value.message == "stage model is corrupt: KeyError: 'forests'"
    assert got.value.fix.startswith("refit")
    with pytest.raises(ModelError, match="stage model is corrupt: TypeError"):
        StageRuntimeModel.from_dict({**doc, "params": {**doc["params"], "colour": 1}}, store=str(HISTORY))

    # from the registry: the same, naming the artifact and the store to refit
    st = store_io.open(tmp_path / "store", create=True)
    rid = R.new_retrain_id()
    rows = []
    for kind, model in ((R.KIND_STAGE, bad),
                        (R.KIND_RUNTIME, {k: v for k, v in JobRuntimeModel(kind="amdahl")
                                          .fit(synthetic_job(cliff=False)).to_dict().items() if k != "component"})):
        rel = R.artifact_relpath("sort", kind, 1, rid)
        R.write_artifact(st, rel, R.make_artifact("sort", kind, model, trained_on="fp"))
        rows.append({"job": "sort", "model_kind": kind, "signature": "", "version": 1, "trained_on": "fp",
                     "artifact": rel, "retrain_id": rid, "registry_version": R.REGISTRY_VERSION,
                     "artifact_version": R.ARTIFACT_VERSION})
    RC.commit_update(st, rows, rid)
    for load, kind, missing in ((R.load_stage_models, R.KIND_STAGE, "forests"),
                                (R.load_models, R.KIND_RUNTIME, "component")):
        with pytest.raises(ModelError) as got:
            load(st)
        rel = R.artifact_relpath("sort", kind, 1, rid)
        assert f"model artifact {rel!r} of job 'sort'" in got.value.message
        assert f"corrupt: KeyError: {missing!r}" in got.value.message
        assert got.value.fix.startswith("refit") and "retrain" in got.value.fix


# ---- 4, 5. the combined model's name ------------------------------------------------------------
def test_the_combined_model_is_named_combined_with_stage_models_too(capsys):
    """`--models auto --stage-models` on a real store: the combined model's rows say `combined`
    beside the stage forest's and the replay's, each scored on every job."""
    assert main(["evaluate", "--store", str(HISTORY), "--stage-models", "--models", "auto", "--split", "cv3",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {r["model"] for r in out["rows"]} == {"combined", "stage-forest", "replay"}
    scored = {(r["job"], r["model"]) for r in out["rows"] if r.get("mape") is not None}
    assert scored == {(j, m) for j in ("sort", "sqljoin", "wordcount") for m in ("combined", "stage-forest", "replay")}
    assert out["summary"]["cv3"]["jobs"] == 3


def test_combined_is_accepted_as_the_kind_auto(tmp_path, capsys):
    _two_jobs().to_csv(tmp_path / "runs.csv", index=False)
    assert main(["evaluate", str(tmp_path / "runs.csv"), "--models", "combined,amdahl", "--split", "cv3",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {r["model"] for r in out["rows"]} == {"combined", "amdahl"}
    assert out["summary"]["cv3"]["jobs"] == 2
    ev = evaluate(_two_jobs(), models=["combined"], include_study=False, splits=("cv3",))
    assert set(ev.rows["model"]) == {"combined"} and ev.rows["error"].isna().all()
    assert main(["evaluate", str(tmp_path / "runs.csv"), "--models", "combind"]) == 2
    assert "auto, or combined, is the combined model" in capsys.readouterr().err


# ---- 6. grammar, and one line per job fit leaves out --------------------------------------------
def test_evaluate_counts_one_run_in_the_singular():
    runs = pd.concat([synthetic_job("etl", cliff=False, sizes=(8, 12, 16), execs=(2, 4, 8)),
                      synthetic_job("once").head(1)], ignore_index=True)
    ev = evaluate(runs, models=["amdahl"], include_study=False, splits=("cv3",))
    assert ev.skipped["once"] == "1 run (< 12)"


def test_fit_says_once_why_a_job_is_left_out_and_what_to_do(tmp_path, capsys, caplog):
    runs = pd.concat([synthetic_job("etl", cliff=False, sizes=(8, 12, 16), execs=(2, 4, 8)),
                      synthetic_job("neg", sizes=(8, 12), execs=(2, 4)).assign(input_bytes=-1)],
                     ignore_index=True)
    runs.to_csv(tmp_path / "runs.csv", index=False)
    assert main(["fit", str(tmp_path / "runs.csv"), "--out", str(tmp_path / "m"), "--kind", "amdahl"]) == 0
    cap = capsys.readouterr()
    assert "neg" not in cap.err and not [r for r in caplog.records if "neg" in r.getMessage()]
    lines = [ln for ln in cap.out.splitlines() if ln.startswith("neg")]
    assert len(lines) == 1
    assert "not fitted: only 0 usable runs (of 20)" in lines[0] and "20 have no positive input_bytes" in lines[0]
    assert "; fix: declare each run's input size" in lines[0]
    # all jobs unfitted is still an error (exit 2), nothing saved
    runs[runs.job == "neg"].to_csv(tmp_path / "neg.csv", index=False)
    assert main(["fit", str(tmp_path / "neg.csv"), "--out", str(tmp_path / "m2")]) == 2
    assert not (tmp_path / "m2").exists()
