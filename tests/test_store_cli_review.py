"""What reviews of the store, ingest, retrain, listener, explain, simulate and predict commands
found: a damaged or nested store written into, a retrain's mark left behind, settings Spark
misreads, misleading messages. Real stores (tests/data/history copies), real event logs."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from sparkpredict import store
from sparkpredict.capture.eventlog_ingest import ingest_event_logs
from sparkpredict.cli import main
from sparkpredict.errors import InputError, StoreError
from sparkpredict.store import io as store_io
from sparkpredict.store.schema import MARKER_FILE

HISTORY = Path(__file__).parent / "data" / "history"
LOG = Path(__file__).parent / "data" / "eventlogs" / "spark4" / "local-1795969313432"


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _err(capsys) -> tuple[str, str]:
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-2].startswith("error: ") and err[-1].startswith("fix: "), err
    return err[-2], err[-1]


@pytest.fixture
def hist(tmp_path) -> Path:
    shutil.copytree(HISTORY, tmp_path / "h")
    return tmp_path / "h"


def test_a_store_whose_marker_is_a_folder_is_refused_not_written_into(hist):
    """Ingest took the folder for another writer's marker, wrote its batch, exited 0 and said
    that nothing was stored."""
    (hist / "NOTES.md").unlink()  # the history's own note: no store file
    (hist / MARKER_FILE).unlink()
    (hist / MARKER_FILE).mkdir()
    before = _tree(hist)
    with pytest.raises(StoreError, match="its marker _sparkpredict_store.json is a folder") as e:
        ingest_event_logs([LOG], store=str(hist))
    assert "remove it" in e.value.fix
    assert _tree(hist) == before


def test_a_store_inside_another_is_refused(hist, tmp_path):
    """`store clean` of the outer store then removed the inner one's marker."""
    before = _tree(hist)
    # the store's own table folder too, though it holds Parquet files: "not a sparkpredict store:
    # it holds other files" pointed at the wrong fix
    assert list((hist / "runs").glob("*.parquet"))
    for inner in (hist / "runs", hist / "inner", hist / "runs" / "sub", hist / "_models" / "artifacts" / "x"):
        with pytest.raises(StoreError, match=f"is inside the store '{hist}'"):
            ingest_event_logs([LOG], store=str(inner))
        with pytest.raises(StoreError, match="inside the store"):
            from sparkpredict.capture.listener import check_store

            check_store(str(inner))  # attach and submit, before Spark starts
    # reading it says the same, naming the store to give
    with pytest.raises(StoreError, match=f"is inside the store '{hist}'") as e:
        store.open(hist / "runs").runs()
    assert str(hist) in e.value.fix
    assert _tree(hist) == before
    assert ingest_event_logs([LOG], store=str(tmp_path / "beside")).files_ingested == 1  # a sibling is fine


def test_a_retrain_whose_first_artifact_fails_leaves_no_running_mark(hist, monkeypatch):
    from sparkpredict import registry as R
    from sparkpredict.retrain import retrain_local

    def fails(*a, **k):
        raise StoreError("cannot write the artifact: disk full", "free some space")

    monkeypatch.setattr(R, "write_artifact", fails)
    with pytest.raises(StoreError, match="disk full"):
        retrain_local(str(hist), force=True)
    running = hist / "_models" / "running"
    assert not running.exists() or list(running.iterdir()) == []  # `store clean` kept its leftovers a day


def test_listener_conf_escapes_what_a_properties_file_would_misread(tmp_path, capsys, listener_jar):
    from sparkpredict.capture.properties import read_properties

    odd = tmp_path / "x\\"  # a trailing backslash continued the line: the next setting was lost
    assert main(["listener", "conf", "--store", str(odd), "--job", "etl\\2"]) == 0
    out = capsys.readouterr().out
    (tmp_path / "conf").write_text(out)
    props = read_properties(str(tmp_path / "conf"))
    assert props["spark.sparkpredict.store"] == f"file://{odd}"
    assert props["spark.sparkpredict.tasks"] == "true" and props["spark.sparkpredict.job"] == "etl\\2"
    assert main(["listener", "conf", "--store", str(tmp_path / "s"), "--job", "a\nb"]) == 2
    assert "holds a control character" in _err(capsys)[0]


def test_job_names_with_control_characters_are_refused(hist, capsys):
    run = store.open(hist).runs().run_id.iloc[0]
    before = _tree(hist)
    assert main(["store", "edit", "--store", str(hist), run, "--job", "multi\nline"]) == 2
    assert "holds a control character" in _err(capsys)[0]
    assert _tree(hist) == before


def test_fit_to_an_empty_folder_name_is_refused_before_fitting(tmp_path, capsys):
    assert main(["runs", "--store", str(HISTORY), "--out", str(tmp_path / "r.parquet")]) == 0
    capsys.readouterr()
    assert main(["fit", str(tmp_path / "r.parquet"), "--out", ""]) == 2
    msg, fix = _err(capsys)
    assert msg == "error: the model folder is empty" and "--out models/" in fix


def test_python_api_takes_one_id_one_column_and_a_bytes_path_as_one(hist, tmp_path):
    st = store.open(hist)
    run = st.runs().run_id.iloc[0]
    assert st.read("runs", run_ids=run).run_id.tolist() == [run]  # was empty: 'l', 'o', ...
    assert list(st.read("runs", columns="run_id").columns) == ["run_id"]
    report = ingest_event_logs(os.fsencode(str(LOG)), store=str(tmp_path / "b"))  # was "47 is not a path"
    assert report.files_ingested == 1
    with pytest.raises(InputError, match="ended='no' is neither True nor False"):
        store.edit_runs(hist, [run], excluded=True, ended="no")
    from sparkpredict.store.compact import compact

    with pytest.raises(InputError, match="dry_run='no' is neither True nor False"):
        compact(str(hist), dry_run="no")


def test_a_negative_age_says_so(hist, capsys):
    for flag, cmd in (("--older-than", "clean"), ("--keep", "compact")):
        assert main(["store", cmd, "--store", str(hist), flag, "-5m", "--dry-run"]) == 2
        assert _err(capsys)[0] == f"error: {flag}: '-5m' is negative"


def test_an_unreadable_part_file_names_its_whole_batch(hist, capsys):
    st = store.open(hist)
    ingest_event_logs([LOG], store=str(hist))
    batch = max(set(st.committed_batches()) - {b for b in st.committed_batches() if "compact" in b})
    tasks = hist / "tasks" / f"part-{batch}.parquet"
    tasks.write_bytes(b"not parquet")
    with pytest.raises(StoreError) as e:
        store.open(hist).read("tasks")
    assert f"part-{batch}.parquet, in every table folder" in e.value.fix and "ingest" in e.value.fix


def test_an_hdfs_store_without_libhdfs_names_what_is_missing():
    with pytest.raises(StoreError) as e:
        store_io.open("hdfs://namenode.invalid:8020/x")
    assert "libhdfs" in e.value.fix and "JAVA_HOME" in e.value.fix


def test_predict_on_an_empty_query_file_says_it_is_empty(tmp_path, capsys):
    (tmp_path / "q.csv").write_text("")
    (tmp_path / "m").mkdir()
    assert main(["predict", str(tmp_path / "m"), str(tmp_path / "q.csv"),
                 "--out", str(tmp_path / "p.csv")]) == 2
    assert "is empty" in _err(capsys)[0]


def test_simulate_on_fewer_host_cores_shows_the_slots_that_run_at_once(hist, capsys):
    run = store.open(hist).runs().run_id.iloc[0]
    assert main(["simulate", run, "--store", str(hist), "--executors", "1,2,4", "--host-cores", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    head = next(i for i, ln in enumerate(out) if ln.lstrip().startswith("executors"))
    assert "at once" in out[head]
    rows = [ln.split() for ln in out[head + 1:head + 4]]
    assert [r[2] for r in rows] == ["1", "2", "4"] and [r[3] for r in rows] == ["1", "1", "1"]
    assert any("'at once' is what runs together" in ln for ln in out)
    assert main(["simulate", run, "--store", str(hist), "--executors", "1,2", "--json", "--host-cores", "1"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [p["running_slots"] for p in doc["predictions"]] == [1, 1]


def test_explain_says_a_run_without_task_rows_has_none(tmp_path):
    """It said "no completed stages" of a run with four, recorded with tasks=false."""
    from sparkpredict import monitor as m
    from sparkpredict.errors import UnknownJobError

    st = store.open(HISTORY)
    runs, stages, tasks = st.read("runs"), st.read("stages"), st.read("tasks")
    job = runs.job.iloc[0]
    runs = runs[runs.job == job]
    victim = runs.run_id.iloc[-1]
    out = store.open(tmp_path / "s", create=True)
    out.append({"runs": runs, "stages": stages[stages.run_id.isin(runs.run_id)],
                "tasks": tasks[tasks.run_id.isin(runs.run_id) & (tasks.run_id != victim)]})
    with pytest.raises(UnknownJobError, match="recorded without task rows") as e:
        m.explain_run(victim, out)
    assert "spark.sparkpredict.tasks=true" in e.value.fix
    # an incomplete run (a cut event log) is explained with the warning a failed one gets
    inc = store.open(tmp_path / "i", create=True)
    inc.append({"runs": runs.assign(status=lambda d: d.status.where(d.run_id != victim, "incomplete")),
                "stages": stages[stages.run_id.isin(runs.run_id)], "tasks": tasks[tasks.run_id.isin(runs.run_id)]})
    e2 = m.explain_run(victim, inc)
    assert e2.warnings and "was recorded only in part" in e2.warnings[0]
    assert isinstance(pd.DataFrame(), pd.DataFrame)


def test_predict_writes_the_level_each_interval_holds(tmp_path, capsys):
    """A --confidence the runs could not support was capped, and said on stderr only."""
    from sparkpredict.models.persist import load_models

    assert main(["runs", "--store", str(HISTORY), "--out", str(tmp_path / "r.parquet")]) == 0
    assert main(["fit", str(tmp_path / "r.parquet"), "--out", str(tmp_path / "m")]) == 0
    (tmp_path / "q.csv").write_text("job,input_bytes,executors\nsort,16MB,2\nwordcount,8MB,1\n")
    top = {j: m.max_confidence() for j, m in load_models(tmp_path / "m").items()}
    for asked in (0.8, 0.999):
        assert main(["predict", str(tmp_path / "m"), str(tmp_path / "q.csv"), "--out", str(tmp_path / "p.csv"),
                     "--confidence", str(asked)]) == 0
        out = pd.read_csv(tmp_path / "p.csv")
        assert out["interval_level"].tolist() == pytest.approx([min(asked, top[j]) for j in out["job"]])
    assert max(top.values()) < 0.999  # so the second round was capped, and the file says so


def test_suggest_says_where_its_model_came_from(hist, tmp_path, capsys, monkeypatch):
    """A registry model, version and retrain, looked like any other fit."""
    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    ask = ["suggest", "--store", str(hist), "--job", "sort", "--input-size", "16MB"]
    assert main(ask) == 0
    assert capsys.readouterr().out.splitlines()[1].endswith(
        ", fitted on the store's runs (no retrain has registered a model of the job)")
    assert main(["retrain", "--store", str(hist), "--job", "sort", "--no-stage-models", "--json"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert main([*ask, "--json"]) == 0
    source = json.loads(capsys.readouterr().out)["model_source"]
    assert source == f"from the registry, version 1 (retrain {done['retrain_id']}, local path)"
    assert main(["runs", "--store", str(hist), "--out", str(tmp_path / "r.parquet")]) == 0
    assert main(["fit", str(tmp_path / "r.parquet"), "--out", str(tmp_path / "m")]) == 0
    capsys.readouterr()
    assert main(["suggest", "--models", str(tmp_path / "m"), "--job", "sort", "--input-size", "16MB"]) == 0
    assert capsys.readouterr().out.splitlines()[1].endswith(f", from the model folder {tmp_path / 'm'}")
