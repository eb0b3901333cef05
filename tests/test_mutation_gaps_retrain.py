"""Boundaries of retraining that no test pinned (a mutation audit of sparkpredict/retrain_plan.py,
retrain.py, retrain_spark.py and jobs/retrain.py): each test asserts a value a mutant changed
unseen. Pure Python: no JVM, no store unless the code path reads one."""
from __future__ import annotations

import pytest

from sparkpredict import registry as R
from sparkpredict.retrain_plan import (
    MISSING,
    _judge,
    _not_refit,
    _verdict,
    refit_reason,
    refit_reasons,
)
from sparkpredict.store import schema as S

FMT = R.runtime_model_format()


def _current(fp: str = "fp1", kind: str = "auto", fmt: int = FMT) -> tuple:
    """A registry state that is current for runs ``fp`` as model ``kind``."""
    return (fp, R.ARTIFACT_VERSION, fmt, S.SCHEMA_VERSION, kind, True)


def test_refit_reason_names_each_cause_of_a_refit():
    assert refit_reason(None, "fp1", "auto", FMT) == "no model yet"
    assert refit_reason(_current("fp0"), "fp1", "auto", FMT) == "its runs changed"
    assert refit_reason(_current(kind="amdahl"), "fp1", "auto", FMT) == (
        "its model was fitted with --kind amdahl, this retrain asks --kind auto")
    old = ("fp1", R.ARTIFACT_VERSION, FMT - 1, S.SCHEMA_VERSION, "auto", True)
    assert refit_reason(old, "fp1", "auto", FMT) == "its model was written by another sparkpredict (another format)"
    other_code = _current()[:5] + (False,)
    assert refit_reason(other_code, "fp1", "auto", FMT) == (
        "its model was fitted by another sparkpredict (other model code)")
    assert refit_reason(_current(), "fp1", "auto", FMT) == "--force"


def test_a_forced_retrain_refits_a_current_model_and_its_stage_model():
    state = {("etl", R.KIND_RUNTIME): _current()}
    assert _verdict(state, "etl", R.KIND_RUNTIME, "fp1", False, "auto", FMT) == "current"
    assert _verdict(state, "etl", R.KIND_RUNTIME, "fp1", True, "auto", FMT) == "stale"
    assert _judge(state, "etl", "fp1", True, "auto") == ((R.KIND_RUNTIME, R.KIND_STAGE), ())
    assert _judge(state, "etl", "fp1", False, "auto") == ((), ())


def test_refit_reasons_names_a_missing_artifact_and_skips_jobs_without_runs():
    state = {("etl", R.KIND_RUNTIME): _current(), ("sort", R.KIND_RUNTIME): _current("old")}
    present = dict(state) | {("etl", R.KIND_RUNTIME): MISSING}
    fps = {"etl": ("fp1", 3), "sort": ("fp1", 2), "new": ("fp9", 1)}
    assert refit_reasons(state, fps, ["etl", "sort", "new", "gone"], "auto", present) == {
        "etl": "its model's file is missing", "sort": "its runs changed", "new": "no model yet"}
    # without the artifacts looked at, the same current row reads as forced
    assert refit_reasons(state, fps, ["etl"], "auto") == {"etl": "--force"}


def test_reasons_line_puts_the_most_common_reason_first_and_counts_past_three():
    from sparkpredict.retrain_plan import reasons_line

    reasons = {"a": "its runs changed", "b": "no model yet", "c": "no model yet"}
    # the shorter reason is the more common one here: the order follows the count, not the text
    assert reasons_line(reasons) == "why: no model yet (b, c); its runs changed (a)"
    many = {j: "no model yet" for j in "abcd"} | {"e": "--force"}
    assert reasons_line(many) == "why: no model yet (4 jobs); --force (e)"


def test_a_stage_model_behind_is_refit_alone_whether_or_not_its_fit_failed_before():
    from sparkpredict.models.stages import STAGE_FORMAT_VERSION

    state = {("etl", R.KIND_RUNTIME): _current(), ("etl", R.KIND_STAGE): _current("old", R.KIND_STAGE)}
    assert _judge(state, "etl", "fp1", False, "auto") == ((R.KIND_STAGE,), ())
    assert _judge(state, "etl", "fp1", False, "auto", stage_models=False) == ((), ())
    # only a failure record of the stage model, on these runs: still failing, not refit
    failed = {("etl", R.KIND_RUNTIME): _current(),
              ("etl", R.failed_kind(R.KIND_STAGE)): _current(kind=R.KIND_STAGE, fmt=STAGE_FORMAT_VERSION)}
    assert _judge(failed, "etl", "fp1", False, "auto") == ((), (R.KIND_STAGE,))
    # and on older runs: refit
    failed[("etl", R.failed_kind(R.KIND_STAGE))] = _current("old", R.KIND_STAGE, STAGE_FORMAT_VERSION)
    assert _judge(failed, "etl", "fp1", False, "auto") == ((R.KIND_STAGE,), ())


def test_not_refit_says_unchanged_only_when_nothing_is_refit_and_the_model_is_not_failing():
    assert _not_refit("etl", (), ()) == [("etl", R.KIND_RUNTIME, "unchanged", None, None)]
    assert _not_refit("etl", (R.KIND_STAGE,), ()) == []
    assert _not_refit("etl", (), (R.KIND_RUNTIME,)) == [("etl", R.KIND_RUNTIME, "still_failing", None, None)]
    assert sorted(_not_refit("etl", (), (R.KIND_STAGE,))) == [("etl", R.KIND_RUNTIME, "unchanged", None, None),
                                                             ("etl", R.KIND_STAGE, "still_failing", None, None)]


def test_check_jobs_keeps_the_asked_jobs_in_order_once_and_refuses_the_others():
    from sparkpredict.errors import UnknownJobError
    from sparkpredict.retrain_plan import _only, check_jobs

    known = ["sort", "etl", None, "etl"]
    assert check_jobs(None, known, "here") is None
    assert check_jobs("etl", known, "here") == ["etl"]
    assert check_jobs(["sort", "etl", "sort"], known, "here") == ["sort", "etl"]
    with pytest.raises(UnknownJobError, match="no runs of job 'etll'") as err:
        check_jobs(["etl", "etll"], known, "here")
    assert "did you mean" in err.value.fix
    with pytest.raises(UnknownJobError, match="no runs of job 3"):
        check_jobs([3], known, "here")
    with pytest.raises(UnknownJobError, match="no job given"):
        check_jobs([], known, "here")
    fps = {"etl": ("a", 1), "sort": ("b", 2)}
    assert _only(fps, None) == fps
    assert _only(fps, ["sort", "x"]) == {"sort": ("b", 2)}


def test_check_jobs_lists_ten_jobs_with_runs_then_an_ellipsis():
    from sparkpredict.errors import UnknownJobError
    from sparkpredict.retrain_plan import check_jobs

    known = [f"job{i:02d}" for i in range(11)]
    with pytest.raises(UnknownJobError) as err:
        check_jobs(["zzz"], known, "here")
    assert err.value.fix.endswith("job09 ...") and "job10" not in err.value.fix
    with pytest.raises(UnknownJobError) as err:
        check_jobs(["zzz"], known[:10], "here")
    assert err.value.fix.endswith("job09")


def test_the_record_of_a_failed_fit_counts_its_versions_and_keeps_what_the_judge_compares():
    from sparkpredict.models.stages import STAGE_FORMAT_VERSION
    from sparkpredict.retrain_plan import _failure_row, _verdict

    first = _failure_row("etl", R.KIND_RUNTIME, ("fp1", 3), "gbm", "too few", 5, "rid", "local", {})
    assert (first["version"], first["model_kind"], first["fit_kind"], first["trained_on_rows"]) == (
        1, R.failed_kind(R.KIND_RUNTIME), "gbm", 3)
    again = _failure_row("etl", R.KIND_RUNTIME, ("fp2", 4), "gbm", "too few", 6, "rid", "local",
                         {("etl", R.KIND_RUNTIME): first | {"version": 3}})
    assert again["version"] == 4
    stage = _failure_row("etl", R.KIND_STAGE, ("fp1", 3), "gbm", "x", 5, "rid", "spark", {}, "DegenerateDataError")
    assert (stage["fit_kind"], stage["model_format_version"], stage["error_type"]) == (
        R.KIND_STAGE, STAGE_FORMAT_VERSION, "DegenerateDataError")
    # what the next retrain reads back from it: "failing" on the same runs, "stale" on others
    state = {("etl", R.failed_kind(R.KIND_RUNTIME)): R.model_state(first)}
    assert _verdict(state, "etl", R.KIND_RUNTIME, "fp1", False, "gbm", FMT) == "failing"
    assert _verdict(state, "etl", R.KIND_RUNTIME, "fp2", False, "gbm", FMT) == "stale"


def _job_script():
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("retrain_job", Path(__file__).resolve().parents[1] / "jobs" / "retrain.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_spark_job_takes_one_partition_refuses_none_and_writes_its_json_file(tmp_path, capsys):
    """A store whose models are all current: jobs/retrain.py answers from the registry, no session."""
    import json
    import shutil
    from pathlib import Path

    from sparkpredict.retrain import retrain_local

    path = tmp_path / "store"
    shutil.copytree(Path(__file__).parent / "data" / "history", path)
    first = retrain_local(path, stage_models=False)
    out = tmp_path / "result.json"
    job = _job_script()
    assert job.main(["--store", str(path), "--partitions", "0", "--no-stage-models", "--no-compact"]) == 2
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["error"] == "--partitions 0 must be at least 1"
    assert job.main(["--store", str(path), "--partitions", "1", "--no-stage-models", "--no-compact",
                     "--json-out", str(out)]) == 0
    doc = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert json.loads(out.read_text()) == doc
    assert (doc["refit"], doc["unchanged"], doc["spark_started"]) == ([], len(first.refit), False)


def test_spark_path_adds_file_scheme_only_to_local_stores_and_escapes_glob_characters(tmp_path):
    from types import SimpleNamespace

    from sparkpredict import store
    from sparkpredict.retrain_spark import spark_path

    st = store.open(tmp_path / "br[1]", create=True)
    assert spark_path(st) == "file://" + str(tmp_path) + "/br\\[1\\]"
    assert spark_path(SimpleNamespace(path="hdfs://nn/x/{a,b}*")) == "hdfs://nn/x/\\{a,b\\}\\*"


def test_a_json_out_that_fails_after_the_commit_exits_1_with_the_json_still_on_stdout(tmp_path, capsys, monkeypatch):
    """The file was checked before the retrain, and became a folder meanwhile: the result's file
    is lost, not the retrain: exit 1 (not an argument's 2), the document still stdout's last line."""
    import json
    import shutil
    from pathlib import Path

    from sparkpredict import retrain as RT

    path = tmp_path / "store"
    shutil.copytree(Path(__file__).parent / "data" / "history", path)
    RT.retrain_local(path, stage_models=False)
    out = tmp_path / "result.json"
    answer = RT.result_if_current

    def then_a_folder(*a, **k):
        res = answer(*a, **k)
        out.mkdir()
        return res

    monkeypatch.setattr(RT, "result_if_current", then_a_folder)
    assert _job_script().main(["--store", str(path), "--no-stage-models", "--no-compact", "--json-out", str(out)]) == 1
    stdout, err = capsys.readouterr()
    assert json.loads(stdout.strip().splitlines()[-1])["exit_code"] == 0
    assert "error: --json-out:" in err and "the registry was updated all the same" in err


def test_the_local_path_fits_stage_models_of_exactly_the_jobs_with_sized_staged_runs(tmp_path):
    """A job whose runs read no input (input_bytes 0) gets no stage model: the dry run's
    count and the local path's fits agree on which jobs do."""
    from pathlib import Path

    from sparkpredict import retrain as RT
    from sparkpredict import store

    src = store.open(Path(__file__).parent / "data" / "history")
    tables = {t: src.read(t) for t in ("runs", "stages", "tasks", "executors")}
    runs = tables["runs"]
    tables["runs"] = runs.assign(input_bytes=runs["input_bytes"].where(runs["job"] != "sort", 0))
    path = tmp_path / "store"
    store.open(path, create=True).append(tables)
    staged = RT.plan_path(path)["stage_jobs"]
    assert staged and "sort" not in staged
    assert RT.jobs_with_stages(path, ["sort"]) == []
    res = RT.retrain_local(path)
    assert res.stage_refit == staged and "sort" in res.stage_skipped


def test_a_hadoop_conf_dir_in_the_environment_lets_yarn_through(monkeypatch, tmp_path):
    from sparkpredict import retrain as RT
    from sparkpredict.errors import InputError

    monkeypatch.delenv("YARN_CONF_DIR", raising=False)
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))  # no spark-env.sh there
    assert RT._hadoop_conf_known() is False
    with pytest.raises(InputError, match="HADOOP_CONF_DIR"):
        RT.check_master("yarn")
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    assert RT._hadoop_conf_known() is True
    RT.check_master("yarn")


def test_the_stage_crossover_is_the_documented_29_jobs(monkeypatch):
    from sparkpredict import retrain as RT

    monkeypatch.delenv(RT.CROSSOVER_ENV, raising=False)
    assert RT.crossover_stage_jobs("auto") == 29  # docs/retrain.md's table
    monkeypatch.setenv(RT.CROSSOVER_ENV, "5")
    assert RT.crossover_stage_jobs("auto") == 5
