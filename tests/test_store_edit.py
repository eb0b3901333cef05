"""`sparkpredict store edit`: correcting recorded runs by appending superseding rows.

Each test edits a copy of the committed store tests/data/history (72 runs of three jobs, 24 each).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from sparkpredict import store
from sparkpredict.errors import InputError, UnknownJobError
from sparkpredict.features.runs import runs_table

HISTORY = Path(__file__).parent / "data" / "history"
LOGS = Path(__file__).parent / "data" / "eventlogs"
WC_FIRST = "local-1795975705584"  # a wordcount run of 3999996 bytes
WC_SECOND = "local-1795975713600"


@pytest.fixture
def hist(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))  # fits keyed on the store version
    path = tmp_path / "history"
    shutil.copytree(HISTORY, path)
    return path


def _files(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file())


def _per_job(path) -> dict[str, int]:
    return runs_table(path)["job"].value_counts().to_dict()


def _fit_n_runs(path, job: str) -> int:
    from sparkpredict.models.persist import fit_job

    table = runs_table(path)
    return int(fit_job(table[table["job"] == job], kind="amdahl").n_runs_)


def test_exclude_leaves_the_run_out_of_training_and_include_takes_it_back(hist):
    from sparkpredict import suggest_executors

    original = store.open(hist).read("runs", run_ids=[WC_FIRST])
    assert _fit_n_runs(hist, "wordcount") == 24
    version = store.open(hist).version()

    new = store.edit_runs(hist, [WC_FIRST], excluded=True)
    assert list(new["run_id"]) == [WC_FIRST] and list(new["status"]) == ["excluded"]
    st = store.open(hist)
    assert st.version() != version  # every cache of fits keyed on it refits
    table = runs_table(hist)
    wc = table[table["job"] == "wordcount"]
    assert len(wc) == 23 and WC_FIRST not in set(wc["run_id"])
    assert _per_job(hist) == {"wordcount": 23, "sort": 24, "sqljoin": 24}
    assert _fit_n_runs(hist, "wordcount") == 23
    assert suggest_executors("wordcount", "64MB", store=hist).n_runs == 23

    back = store.edit_runs(hist, WC_FIRST, excluded=False)
    assert list(back["status"]) == ["succeeded"]
    assert _fit_n_runs(hist, "wordcount") == 24
    assert suggest_executors("wordcount", "64MB", store=hist).n_runs == 24
    # nothing lost: the row as captured, then the two edits, each later than the one before
    rows = store.open(hist).read("runs", run_ids=[WC_FIRST], all_rows=True)
    assert list(rows["status"]) == ["succeeded", "excluded", "succeeded"]
    assert rows["updated_ms"].is_monotonic_increasing and rows["updated_ms"].is_unique
    pd.testing.assert_frame_equal(rows.iloc[[0]].reset_index(drop=True), original)
    latest = store.open(hist).read("runs", run_ids=[WC_FIRST])
    same = [c for c in original.columns if c not in ("status", "updated_ms")]
    pd.testing.assert_frame_equal(latest[same], original[same])  # only what was asked changed
    assert len(store.open(hist).stages()) == 384  # stage rows are not copied


def test_include_restores_the_status_the_run_had_not_succeeded(hist):
    """A failed run excluded and included again is failed, not succeeded: --include restores the
    latest status before the exclusion, read from all the run's rows."""
    st = store.open(hist)
    row = st.read("runs", run_ids=[WC_SECOND])
    st.append({"runs": row.assign(status="failed", updated_ms=row["updated_ms"] + 1)})
    assert len(runs_table(hist)) == 71
    store.edit_runs(hist, [WC_SECOND], excluded=True)
    store.edit_runs(hist, [WC_SECOND], excluded=False)
    assert list(store.open(hist).read("runs", run_ids=[WC_SECOND])["status"]) == ["failed"]
    assert len(runs_table(hist)) == 71


def test_relabel_moves_runs_and_their_stages_to_the_new_job(hist):
    from sparkpredict.features.stages import stage_table
    from sparkpredict.registry import runs_fingerprint

    st = store.open(hist)
    before = runs_fingerprint(st.runs().query("job == 'wordcount'"))
    new = store.edit_runs(hist, [WC_FIRST, WC_SECOND, WC_FIRST], job="wc-other")
    assert list(new["run_id"]) == [WC_FIRST, WC_SECOND] and set(new["job"]) == {"wc-other"}
    counts = _per_job(hist)
    assert counts == {"wordcount": 22, "wc-other": 2, "sort": 24, "sqljoin": 24}
    assert sum(counts.values()) == 72
    st = store.open(hist)
    runs = st.runs()
    # a retrain compares this fingerprint with the registry's: the old job is refit too
    assert runs_fingerprint(runs.query("job == 'wordcount'")) != before
    # stage rows carry no job: the stage features take it from the runs' latest rows
    moved = stage_table(runs[runs["job"] == "wc-other"], st.stages())
    assert set(moved["job"]) == {"wc-other"} and set(moved["run_id"]) == {WC_FIRST, WC_SECOND}


def test_input_size_is_declared_and_seen_by_the_runs_table_and_suggest(hist):
    from sparkpredict import suggest_executors

    assert suggest_executors("wordcount", "64MB", store=hist).training_range["input_bytes"][1] == 31999924
    store.edit_runs(hist, [WC_FIRST], input_bytes="64MB")
    table = runs_table(hist).set_index("run_id")
    assert table.loc[WC_FIRST, "input_bytes"] == 64_000_000
    assert store.open(hist).read("runs", run_ids=[WC_FIRST])["input_bytes_source"].tolist() == ["declared"]
    assert suggest_executors("wordcount", "64MB", store=hist).training_range["input_bytes"][1] == 64_000_000


def _running(hist) -> str:
    st = store.open(hist)
    row = st.read("runs", run_ids=[WC_SECOND])
    st.append({"runs": row.assign(status="running", updated_ms=row["updated_ms"] + 1)})
    return WC_SECOND


@pytest.mark.parametrize("ids, kwargs, said, fix", [
    (["local-1795975705585"], {"excluded": True}, "no run 'local-1795975705585' in store",
     f"did you mean {WC_FIRST}"),
    ([], {"excluded": True}, "no run to edit", "store summary"),
    ([WC_FIRST], {}, "no change asked for", "--input-size SIZE"),
    ([WC_FIRST], {"excluded": False}, "is not excluded (its status is succeeded)", "lists the excluded runs"),
    ([WC_FIRST], {"job": "  "}, "job name '  ' is blank", "--job"),
    ([WC_FIRST], {"input_bytes": "-3GB"}, "size '-3GB' must be positive", "above zero"),
    ([WC_FIRST], {"input_bytes": 0}, "size 0 must be positive", "above zero"),
    ([WC_FIRST], {"input_bytes": "3 parsecs"}, "cannot read '3 parsecs' as a size", "300GB"),
    ([WC_FIRST], {"input_bytes": "4000000b"}, None, None),  # the control: a real change is written
    ([WC_FIRST, WC_SECOND], {"job": "wordcount"}, "2 runs would not change (job 'wordcount' already)",
     "leave them out"),
    ([WC_FIRST, "running"], {"excluded": True}, "is still running", "once it has ended"),
])
def test_refusals_write_nothing(hist, ids, kwargs, said, fix):
    rows = 72
    if "running" in ids:
        ids, rows = [WC_FIRST, _running(hist)], 73
    files = _files(hist)
    if said is None:  # the control: the same call shape does write
        store.edit_runs(hist, ids, **kwargs)
        assert _files(hist) != files
        return
    with pytest.raises(InputError) as e:
        store.edit_runs(hist, ids, **kwargs)
    assert said in e.value.message and fix in (e.value.fix or ""), (e.value.message, e.value.fix)
    assert _files(hist) == files
    assert len(store.open(hist).read("runs", all_rows=True)) == rows


def test_excluding_an_excluded_run_again_is_refused(hist):
    store.edit_runs(hist, [WC_FIRST], excluded=True)
    files = _files(hist)
    with pytest.raises(InputError, match="1 run would not change \\(excluded already\\)"):
        store.edit_runs(hist, [WC_FIRST], excluded=True)
    assert _files(hist) == files


def test_a_job_whose_runs_are_all_excluded_is_told_to_include_them(hist):
    ids = list(store.open(hist).runs().query("job == 'sort'")["run_id"])
    store.edit_runs(hist, ids, excluded=True)
    from sparkpredict import suggest_executors

    with pytest.raises(UnknownJobError) as e:
        suggest_executors("sort", "64MB", store=hist)
    assert e.value.message.endswith("has no succeeded runs in " f"store {str(hist)!r}: 24 runs are excluded "
                                    "from training")
    assert "sparkpredict store edit RUN_ID... --include" in e.value.fix


def test_cli_prints_old_to_new_per_run_and_summary_lists_excluded(hist, capsys):
    from sparkpredict.cli import main

    s = str(hist)
    assert main(["store", "edit", WC_FIRST, WC_SECOND, "--exclude", "--input-size", "5MB", "--store", s]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [f"{WC_FIRST}: status succeeded -> excluded; input 4.00 MB -> 5 MB (declared)",
                   f"{WC_SECOND}: status succeeded -> excluded; input 4.00 MB -> 5 MB (declared)",
                   f"store {s}: 2 runs edited"]
    assert main(["store", "summary", "--store", s, "--last", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "excluded from training: 2 runs (`sparkpredict store edit RUN_ID --include` takes one back)" in out
    at = out.index("excluded from training: 2 runs (`sparkpredict store edit RUN_ID --include` takes one back)")
    assert out[at + 1].split() == [WC_SECOND, "wordcount"] and out[at + 2] == "  ... and 1 earlier (--last lists more)"
    assert next(ln for ln in out if ln.startswith("wordcount")).split()[:3] == ["wordcount", "24", "22"]

    assert main(["store", "edit", WC_FIRST, "--include", "--job", "wc2", "--store", s, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"store": s, "runs": [
        {"run_id": WC_FIRST, "before": {"status": "excluded", "job": "wordcount"},
         "after": {"status": "succeeded", "job": "wc2"}}]}

    files = _files(hist)
    assert main(["store", "edit", WC_FIRST, "--include", "--exclude", "--store", s]) == 2
    assert "error: --exclude and --include together" in capsys.readouterr().err
    assert main(["store", "edit", WC_FIRST, "--input-size", "0", "--store", s, "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"] == "--input-size: size '0' must be positive"
    assert _files(hist) == files


def test_reingesting_a_log_keeps_the_edit(tmp_path):
    """An unchanged log is skipped by its fingerprint, which the edit's row keeps: the run is not
    read again, and keeps its edited job and size."""
    from sparkpredict.capture.eventlog_ingest import ingest_event_logs

    log = LOGS / "sparklens_local-1532512550423.json"
    path = tmp_path / "s"
    rep = ingest_event_logs([str(log)], store=path)
    rid = rep.files[0].run_id
    assert store.open(path).runs()["input_bytes"].tolist() == [0]
    store.edit_runs(path, [rid], job="etl", input_bytes="2GiB")
    files = _files(path)
    again = ingest_event_logs([str(log)], store=path)
    assert [f.outcome for f in again.files] == ["unchanged"]
    # asked for yet another job: still skipped, the edited job kept (and warned about)
    again = ingest_event_logs([str(log)], store=path, job="other")
    assert [f.outcome for f in again.files] == ["unchanged"]
    assert _files(path) == files
    run = store.open(path).runs().iloc[0]
    assert (run["job"], run["input_bytes"], run["input_bytes_source"]) == ("etl", 2 * 2**30, "declared")


def test_a_run_that_will_never_end_is_edited_with_ended(hist, capsys):
    """A driver killed with SIGKILL leaves its run `running` for good: the refusal's fix ("edit it
    once it has ended") could never be followed."""
    from sparkpredict.cli import main

    rid = _running(hist)
    assert main(["store", "edit", rid, "--exclude", "--store", str(hist)]) == 2
    err = capsys.readouterr().err
    assert "is still running" in err and "add --ended (ended=True from Python)" in err, err
    assert main(["store", "edit", rid, "--exclude", "--ended", "--store", str(hist)]) == 0
    assert store.open(hist).read("runs", run_ids=[rid])["status"].tolist() == ["excluded"]


def test_two_edits_of_one_run_at_once_both_hold(hist):
    """Each edit copies the run's latest row: two at once each copied the same one, and the later
    undid the earlier (1 in 4 tries here lost the --input-size, both commands saying "1 run
    edited"). The writer lock makes the second read the first's row."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    for i in range(3):
        job, size = f"moved-{i}", f"{7 + i}GB"
        cmds = [[sys.executable, "-m", "sparkpredict", "store", "edit", WC_FIRST, "--job", job, "--store", str(hist)],
                [sys.executable, "-m", "sparkpredict", "store", "edit", WC_FIRST, "--input-size", size,
                 "--store", str(hist)]]
        procs = [subprocess.Popen(c, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for c in cmds]
        outs = [p.communicate(timeout=120) for p in procs]
        assert [p.returncode for p in procs] == [0, 0], outs
        row = store.open(hist).read("runs", run_ids=[WC_FIRST]).iloc[0]
        assert (row.job, int(row.input_bytes)) == (job, (7 + i) * 10**9), outs
