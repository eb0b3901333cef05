"""Behaviour of ``store.edit`` and of ``sparkpredict store summary|clean|edit`` over it that a
mutation audit of them found no test pinning: which window of times is empty, which job names
an edit may give, the stamp an edit row wins by, and what the refusals name. Each test builds
a small real store on disk; none starts a JVM."""
from __future__ import annotations

import json
import time

import pandas as pd
import pytest

from sparkpredict import store
from sparkpredict.errors import InputError
from sparkpredict.units import format_time

DAY = 86_400_000


def _runs(*rows: dict) -> dict[str, pd.DataFrame]:
    base = {"job": "j", "status": "succeeded", "start_ms": 1000, "updated_ms": 1}
    return {"runs": pd.DataFrame([{**base, **r} for r in rows])}


def _store(tmp_path, *rows: dict):
    st = store.open(tmp_path / "st", create=True)
    st.append(_runs(*rows))
    return st


def _rows(st) -> int:
    return len(st.read("runs", all_rows=True))


# ---- store.edit: by time ----------------------------------------------------------------------

def test_an_after_equal_to_the_before_is_an_empty_window_said_as_such(tmp_path):
    # [t, t) holds no start: told as the two times, not as "no succeeded run in that time"
    st = _store(tmp_path, {"run_id": "a", "start_ms": 5 * DAY})
    t = format_time(5 * DAY)
    with pytest.raises(InputError) as e:
        store.edit_runs_by_time(st, "j", before=t, after=t)
    assert e.value.message.startswith(f"--after {t} is not before --before {t}")
    assert _rows(st) == 1


def test_a_before_past_the_newest_start_but_not_past_now_takes_every_run(tmp_path):
    # only a time later than both now and the newest start is "in the future"
    st = _store(tmp_path, {"run_id": "a", "start_ms": 5 * DAY}, {"run_id": "b", "start_ms": 6 * DAY})
    new = store.edit_runs_by_time(st, "j", before="2020-01-01")
    assert list(new["run_id"]) == ["a", "b"] and (new["status"] == "excluded").all()


def test_a_future_time_names_the_newest_start_only_when_that_start_is_ahead_of_the_clock(tmp_path):
    st = _store(tmp_path, {"run_id": "a", "start_ms": 5 * DAY})
    with pytest.raises(InputError) as e:
        store.edit_runs_by_time(st, "j", before="2999-01-01")
    assert "is in the future" in e.value.message
    assert "newest run" not in e.value.message
    assert _rows(st) == 1


def test_a_job_name_close_to_the_stores_is_suggested(tmp_path):
    # difflib's ratio of 'sorter' to 'sortjob' is 0.615: over the 0.6 cutoff
    st = _store(tmp_path, {"run_id": "a", "job": "sortjob"})
    with pytest.raises(InputError) as e:
        store.edit_runs_by_time(st, "sorter", before="2020-01-01")
    assert e.value.fix.startswith("did you mean 'sortjob'? ")


def test_an_empty_window_counts_the_runs_in_it_of_another_status(tmp_path):
    st = _store(tmp_path, {"run_id": "a", "status": "failed", "start_ms": 5 * DAY},
                {"run_id": "b", "status": "failed", "start_ms": 6 * DAY},
                {"run_id": "c", "start_ms": 9 * DAY})
    with pytest.raises(InputError) as e:
        store.edit_runs_by_time(st, "j", before=format_time(8 * DAY))
    assert "; 2 other runs in that time are not succeeded)" in e.value.message
    assert _rows(st) == 3


# ---- store.edit: by id -------------------------------------------------------------------------

def test_runs_move_to_a_padded_job_the_store_holds_and_not_to_one_it_does_not(tmp_path):
    # the listener records an app name as the job unchanged ("nightly etl "): runs may join it,
    # while a padded name no run has is a typing slip, refused before the store is read
    st = _store(tmp_path, {"run_id": "a", "job": "nightly etl "}, {"run_id": "b", "job": "other"})
    new = store.edit_runs(st, ["b"], job="nightly etl ")
    assert list(new["job"]) == ["nightly etl "]
    with pytest.raises(InputError) as e:
        store.edit_runs(st, ["a"], job="weekly etl ")
    assert "begins or ends with spaces" in e.value.message
    with pytest.raises(InputError) as e:
        store.edit_runs(st, ["a"], job="   ")
    assert "is blank" in e.value.message
    assert _rows(st) == 3


def test_an_edit_of_a_run_stamped_ahead_of_the_clock_is_stamped_one_ms_later(tmp_path):
    # a tie with the run's latest row would leave the choice to batch order
    ahead = int(time.time() * 1000) + 365 * DAY
    st = _store(tmp_path, {"run_id": "a", "updated_ms": ahead})
    new = store.edit_runs(st, ["a"], excluded=True)
    assert int(new["updated_ms"].iloc[0]) == ahead + 1
    assert store.open(st.path).runs().set_index("run_id").loc["a", "status"] == "excluded"


def test_an_unknown_run_id_is_told_the_three_closest(tmp_path):
    # difflib's ratio of 'app-9' to 'app-1' is 0.8: at the cutoff, and at most three named
    st = _store(tmp_path, *({"run_id": f"app-{i}"} for i in range(1, 5)))
    with pytest.raises(InputError) as e:
        store.edit_runs(st, ["app-9"], excluded=True)
    said = e.value.fix.split("? ")[0].removeprefix("did you mean ").split(", ")
    assert len(said) == 3 and set(said) <= {"app-1", "app-2", "app-3", "app-4"}
    assert _rows(st) == 4


def test_include_restores_the_latest_status_though_an_earlier_row_has_none(tmp_path):
    # a row without a status (written by another tool) before the latest one with it
    st = _store(tmp_path, {"run_id": "a", "status": None, "updated_ms": 10})
    st.append(_runs({"run_id": "a", "status": "failed", "updated_ms": 20}))
    st.append(_runs({"run_id": "a", "status": "excluded", "updated_ms": 30}))
    new = store.edit_runs(st, ["a"], excluded=False)
    assert list(new["status"]) == ["failed"]


# ---- sparkpredict store summary ----------------------------------------------------------------

def test_the_summary_tables_cut_long_jobs_at_60_and_show_a_missing_start_as_a_dash(tmp_path, capsys):
    from sparkpredict.cli import main

    long = "x" * 70
    st = _store(tmp_path, {"run_id": "a", "job": long, "start_ms": None, "wall_ms": 2000},
                {"run_id": "b", "job": "j", "start_ms": 5 * DAY, "wall_ms": 4000})
    assert main(["store", "summary", "--store", st.path]) == 0
    out = capsys.readouterr().out.splitlines()
    cut = "x" * 59 + "…"
    row = next(ln for ln in out if ln.startswith(cut + " "))  # the per-job table: cut at 60
    assert row.split() == [cut, "1", "1", "2.0s", "-"]  # no start recorded: "-", not "None"
    # the latest runs' job column is as wide as its longest name, and at least as "job"
    assert next(ln for ln in out if ln.startswith("b ")).split()[:3] == ["b", "j", "succeeded"]
    head = next(ln for ln in out if ln.startswith("run_id"))
    assert head.startswith("run_id " + "job".ljust(60) + " status")
    assert main(["store", "summary", "--store", st.path, "--json"]) == 0
    assert [j["job"] for j in json.loads(capsys.readouterr().out)["jobs"]] == ["j", long]


def test_the_summary_lists_the_short_job_column_three_wide(tmp_path, capsys):
    from sparkpredict.cli import main

    st = _store(tmp_path, {"run_id": "a", "job": "j", "start_ms": 5 * DAY, "wall_ms": 2000})
    assert main(["store", "summary", "--store", st.path]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[2].startswith("job  runs    ok") and out[3].startswith("j       1     1")
    assert out[3].endswith("  1970-01-06 00:00")
    at = out.index("latest 1 run:")
    assert out[at + 1].startswith("run_id job status") and out[at + 2].startswith("a      j   succeeded")


def test_the_summary_says_no_earlier_excluded_run_when_all_are_listed(tmp_path, capsys):
    from sparkpredict.cli import main

    st = _store(tmp_path, {"run_id": "a", "status": "excluded", "start_ms": 5 * DAY},
                {"run_id": "b", "status": "excluded", "start_ms": 6 * DAY})
    assert main(["store", "summary", "--store", st.path, "--last", "2"]) == 0
    out = capsys.readouterr().out
    assert "excluded from training: 2 runs" in out and "earlier (--last lists more)" not in out
    assert "\n  a      j\n  b      j\n" in out  # the ids' column at least as wide as "run_id"
    assert main(["store", "summary", "--store", st.path, "--last", "1"]) == 0
    assert "  ... and 1 earlier (--last lists more)" in capsys.readouterr().out.splitlines()


def test_the_summary_of_an_empty_store_exits_0_and_lists_10_runs_by_default(tmp_path, capsys):
    from sparkpredict.cli import main

    path = str(tmp_path / "st")
    store.open(path, create=True)
    assert main(["store", "summary", "--store", path]) == 0
    assert capsys.readouterr().out == f"store {path}: 0 runs\n"
    st = store.open(path)
    st.append(_runs(*({"run_id": f"r{i:02}", "start_ms": (i + 1) * DAY} for i in range(11))))
    assert main(["store", "summary", "--store", path]) == 0
    out = capsys.readouterr().out
    assert "latest 10 runs:" in out and "\nr00 " not in out and "\nr01 " in out


def test_a_zero_input_leaves_a_column_of_binary_sizes_binary(tmp_path, capsys):
    # 0 is no size recorded: it neither shows nor turns the column decimal
    from sparkpredict.cli import main

    st = _store(tmp_path, {"run_id": "a", "input_bytes": 8 * 2**20}, {"run_id": "b", "input_bytes": 0})
    assert main(["store", "summary", "--store", st.path]) == 0
    rows = {ln.split()[0]: ln.split()[3:5] for ln in capsys.readouterr().out.splitlines() if ln[:2] in ("a ", "b ")}
    assert rows == {"a": ["8", "MiB"], "b": ["-", "-"]}


def test_an_edit_from_an_input_of_one_byte_tells_it_as_a_size(tmp_path, capsys):
    from sparkpredict.cli import main

    st = _store(tmp_path, {"run_id": "a", "input_bytes": 1})
    assert main(["store", "edit", "a", "--input-size", "2", "--store", st.path]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "a: input 1 B -> 2 B (declared)"


def test_the_summary_counts_an_input_of_one_byte_as_recorded(tmp_path, capsys):
    from sparkpredict.cli import main

    st = _store(tmp_path, {"run_id": "a", "input_bytes": 1}, {"run_id": "b", "input_bytes": 0})
    assert main(["store", "summary", "--store", st.path, "--json"]) == 0
    out = capsys.readouterr().out
    assert out.startswith('{\n  "store": ')
    job = json.loads(out)["jobs"][0]
    assert (job["input_bytes_min"], job["input_bytes_max"]) == (1, 1)
    assert {r["run_id"]: r["input_bytes"] for r in json.loads(out)["latest"]} == {"a": 1, "b": None}
    # in the latest runs' table: 1 byte is a size, 0 none
    assert main(["store", "summary", "--store", st.path]) == 0
    rows = {ln.split()[0]: ln.split()[3] for ln in capsys.readouterr().out.splitlines() if ln[:2] in ("a ", "b ")}
    assert rows == {"a": "1", "b": "-"}


# ---- sparkpredict store clean / compact --------------------------------------------------------

def test_a_clean_of_files_older_than_one_second_says_what_it_kept(tmp_path, capsys):
    # any age above 0 keeps the younger files, and says so on stderr
    from sparkpredict.cli import main

    st = _store(tmp_path, {"run_id": "a"})
    young = tmp_path / "st" / "runs" / ".part-998-young.parquet.tmp"
    young.write_bytes(b"partial")
    assert main(["store", "clean", "--store", st.path, "--older-than", "1h"]) == 0
    err = capsys.readouterr().err
    assert "kept 1 uncommitted file(s) modified in the last 1h" in err
    young.touch()  # the clean lists it well within the second
    assert main(["store", "clean", "--store", st.path, "--older-than", "1s", "--dry-run"]) == 0
    assert "kept 1 uncommitted file(s) modified in the last 1s" in capsys.readouterr().err


def test_a_young_artifact_of_a_retrain_not_marked_running_is_kept_as_young(tmp_path, capsys):
    # only a retrain's running marker says "marked running": a killed retrain's artifact
    # without one is kept for its age alone
    from sparkpredict import registry as R
    from sparkpredict.cli import main

    st = _store(tmp_path, {"run_id": "a"})
    art = tmp_path / "st" / "_models" / R.artifact_relpath("j", "runtime", 1, R.new_retrain_id())
    art.parent.mkdir(parents=True, exist_ok=True)
    art.write_text("{}")
    assert main(["store", "clean", "--store", st.path, "--dry-run"]) == 0
    assert capsys.readouterr().err.splitlines() == [
        ("kept 1 uncommitted file(s) modified in the last 10m, in case their writer is still at work; "
         "pass --older-than 0 if none is running")]


def test_store_compact_and_edit_json_exit_0_and_print_indented_json(tmp_path, capsys):
    from sparkpredict.cli import main

    st = _store(tmp_path, {"run_id": "a"})
    assert main(["store", "compact", "--store", st.path, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["merged"] == 0
    assert main(["store", "edit", "a", "--exclude", "--store", st.path, "--json"]) == 0
    assert capsys.readouterr().out.startswith('{\n  "store": ')


def test_a_compaction_that_merged_nothing_says_no_replaced_files_stay():
    from sparkpredict.cli.store_cmd import compact_lines
    from sparkpredict.store.compact import CompactResult

    r = CompactResult(store="/s", batches_before=3, batches_after=3, merged=0, written=0,
                      merged_bytes=0, going=0, keep_s=600.0)
    assert compact_lines(r) == [("store /s: nothing to merge in its 3 batches: none is small and next to "
                                 "another small one")]
    # any keep above 0 says how long the replaced files stay
    kept = CompactResult(store="/s", batches_before=3, batches_after=1, merged=3, written=1,
                         merged_bytes=3000, going=0, keep_s=1.0)
    assert compact_lines(kept)[-1] == ("the replaced batches' files stay 1.0s for readers still reading them; "
                                       "the next compact or `store clean` removes them")
    # batches left alone are the reason: "none is small" would be wrong then
    going = CompactResult(store="/s", batches_before=3, batches_after=3, merged=0, written=0,
                          merged_bytes=0, going=2, keep_s=600.0)
    assert compact_lines(going) == ["store /s: nothing to merge in its 3 batches",
                                    "left alone: 2 batches of runs still going; a later compact takes them"]


# ---- store.compact -----------------------------------------------------------------------------

def test_pending_counts_a_batch_under_half_the_target_and_not_one_of_exactly_half(tmp_path):
    from sparkpredict.store import compact as C

    st = _store(tmp_path, {"run_id": "a"})
    size = sum(p.stat().st_size for p in (tmp_path / "st").rglob("*.parquet"))
    assert C.pending(st, target_bytes=2 * size) == 0
    assert C.pending(st, target_bytes=2 * size + 1) == 1


def test_a_group_fills_up_to_the_target_exactly():
    from sparkpredict.store import compact as C

    assert C._groups(["a", "b", "c", "d"], set(), dict.fromkeys("abcd", 1), 4) == [["a", "b", "c", "d"]]


def test_a_compaction_keeps_the_replaced_files_10_minutes_by_default(tmp_path):
    from sparkpredict.store import compact as C

    st = _store(tmp_path, {"run_id": "a"})
    st.append(_runs({"run_id": "b"}))
    r = C.compact(st)
    assert r.merged == 2 and r.keep_s == 600.0
