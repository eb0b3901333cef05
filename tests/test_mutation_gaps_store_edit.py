"""Behaviour of ``store.edit`` and of ``sparkpredict store summary|clean|edit`` over it that a
mutation audit of them found no test pinning: which window of times is empty, which job names
an edit may give, the stamp an edit row wins by, and what the refusals name. Each test builds
a small real store on disk; none starts a JVM."""
from __future__ import annotations

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
