"""`sparkpredict store edit --exclude|--include --job J --before/--after TIME`: a job's runs
selected by their start time instead of by id, in one atomic batch, and the refusals of times
that cannot be meant. Each test edits a copy of the committed store tests/data/history."""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from sparkpredict import store as store_mod
from sparkpredict.errors import InputError
from sparkpredict.units import format_time, parse_time

DAY = 86_400_000
HISTORY = Path(__file__).parent / "data" / "history"


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))


@pytest.fixture
def hist(tmp_path):
    path = tmp_path / "history"
    shutil.copytree(HISTORY, path)
    return path


def _files(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file())


def _starts(path, job):
    r = store_mod.open(path).runs()
    return r[r["job"] == job].sort_values("start_ms")


def test_edit_by_time_excludes_exactly_the_jobs_runs_before_it_in_one_batch(hist):
    wc = _starts(hist, "wordcount")
    cut = int(wc["start_ms"].iloc[10])  # the 11th run's start: 10 runs started before it
    files = _files(hist)
    new = store_mod.edit_runs_by_time(hist, "wordcount", before=format_time(cut, ms_precision=True))
    assert list(new["run_id"]) == list(wc["run_id"].iloc[:10])
    assert (new["status"] == "excluded").all()
    added = [f for f in _files(hist) if f not in files]
    assert len(added) == 1 and added[0].startswith("runs/"), added  # one batch, runs rows only
    after = store_mod.open(hist).runs().set_index("run_id")["status"]
    assert set(after[after == "excluded"].index) == set(wc["run_id"].iloc[:10])  # no other job's run
    # --after takes the rest; both together the runs between them
    back = store_mod.edit_runs_by_time(hist, "wordcount", before=format_time(cut, ms_precision=True),
                                       after=format_time(int(wc["start_ms"].iloc[4]), ms_precision=True),
                                       excluded=False)
    assert list(back["run_id"]) == list(wc["run_id"].iloc[4:10]) and (back["status"] == "succeeded").all()
    late = store_mod.edit_runs_by_time(hist, "wordcount", after=format_time(cut, ms_precision=True))
    assert list(late["run_id"]) == list(wc["run_id"].iloc[10:])


def test_a_time_reads_as_utc_unless_an_offset_is_given():
    assert parse_time("2026-12-01") == parse_time("2026-12-01T00:00:00Z") == 1_796_083_200_000
    assert parse_time("2026-12-01T05:00+02:00") == parse_time("2026-12-01 03:00") == 1_796_094_000_000
    assert parse_time("2026-12-01T03:00:00.5") == 1_796_094_000_500
    assert parse_time(format_time(1_796_094_000_123, ms_precision=True)) == 1_796_094_000_123
    for bad, said in [("1796094000000", "cannot read"), ("2026-13-01", "out of range"), ("tomorrow", "cannot read"),
                      ("2026-12-01T03:00+25:00", "no such offset")]:
        with pytest.raises(InputError, match=said) as e:
            parse_time(bad)
        assert "UTC unless an offset is given" in e.value.fix


@pytest.mark.parametrize("args, said, fix", [
    (["--exclude", "--job", "wordcount", "--before", "2020-01-01"],
     ("error: no succeeded run of wordcount started before 2020-01-01T00:00:00Z (its 24 runs started from "
     "2026-11-29T18:08:25Z to 2026-11-29T18:10:10Z)"), "fix: check the time"),
    (["--exclude", "--job", "wordcount", "--before", "2999-01-01"],
     "error: --before 2999-01-01T00:00:00Z is in the future", "fix: give a time at or before now"),
    (["--exclude", "--before", "2026-11-29T18:09:00Z"],
     "error: --before without --job: a time selects the runs of one job", "fix: add --job NAME"),
    (["local-1795975705584", "--exclude", "--job", "wordcount", "--before", "2026-11-29T18:09:00Z"],
     "error: run ids and --before together", "fix: give the run ids, or --job NAME with --before TIME, not both"),
    (["--job", "wordcount", "--before", "2026-11-29T18:09:00Z"],
     "error: --before selects runs to exclude or include, and neither was asked for", "fix: add --exclude"),
    (["--exclude", "--job", "wordcount", "--before", "2026-11-29T18:09:00Z", "--input-size", "5MB"],
     "error: --input-size with --before", "fix: give the runs by id for --input-size"),
    (["--exclude", "--job", "wordcount", "--before", "last week"],
     "error: --before: cannot read 'last week' as a time", "fix: write an ISO date or date and time"),
    (["--exclude", "--job", "wordcount", "--after", "2026-11-29T18:10:00Z", "--before", "2026-11-29T18:09:00Z"],
     "error: --after 2026-11-29T18:10:00Z is not before --before 2026-11-29T18:09:00Z",
     "fix: give --after an earlier time"),
    (["--exclude", "--job", "wordcnt", "--before", "2026-11-29T18:09:00Z"],
     "error: no job wordcnt in store", "fix: did you mean 'wordcount'?"),
    (["--include", "--job", "wordcount", "--before", "2026-11-29T18:09:00Z"],
     "error: no excluded run of wordcount started before 2026-11-29T18:09:00Z", "fix: check the time"),
    (["--exclude"], "error: no run to edit", "fix: give one or more run ids"),
])
def test_edit_by_time_refuses_clear_mistakes_and_writes_nothing(hist, capsys, args, said, fix):
    from sparkpredict.cli import main

    files = _files(hist)
    assert main(["store", "edit", *args, "--store", str(hist)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(said), err
    assert err[1].startswith(fix), err
    assert _files(hist) == files
    assert main(["store", "edit", *args, "--store", str(hist), "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"] == err[0][len("error: "):]


def test_edit_by_time_prints_and_writes_json_as_an_edit_by_id(hist, capsys):
    from sparkpredict.cli import main

    wc = _starts(hist, "wordcount")
    cut = format_time(int(wc["start_ms"].iloc[2]), ms_precision=True)
    s = str(hist)
    assert main(["store", "edit", "--exclude", "--job", "wordcount", "--before", cut, "--store", s, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"store": s, "runs": [
        {"run_id": rid, "before": {"status": "succeeded"}, "after": {"status": "excluded"}}
        for rid in wc["run_id"].iloc[:2]]}
    assert main(["store", "edit", "--include", "--job", "wordcount", "--before", cut, "--store", s]) == 0
    assert capsys.readouterr().out.splitlines() == [
        *(f"{rid}: status excluded -> succeeded" for rid in wc["run_id"].iloc[:2]), f"store {s}: 2 runs edited"]


def test_the_python_api_names_its_arguments(hist):
    with pytest.raises(InputError, match="no time given") as e:
        store_mod.edit_runs_by_time(hist, "wordcount")
    assert "--before TIME" in e.value.fix
    with pytest.raises(InputError, match="no job given"):
        store_mod.edit_runs_by_time(hist, None, before="2026-11-29")  # type: ignore[arg-type]
    future = format_time(time.time() * 1000 + DAY)
    with pytest.raises(InputError, match="is in the future"):
        store_mod.edit_runs_by_time(hist, "wordcount", after=future)


def test_a_time_between_two_milliseconds_takes_the_runs_that_started_before_it(hist):
    # starts are whole ms: a run at .000 started before .0004, and one at .001 not; rounded to
    # the nearest ms (.0004 -> .000) the first had been left out
    wc = _starts(hist, "wordcount")
    cut = int(wc["start_ms"].iloc[3])
    just_after = format_time(cut, ms_precision=True)[:-1] + "4Z"  # .xyz4: 0.4 ms after the 4th start
    new = store_mod.edit_runs_by_time(hist, "wordcount", before=just_after)
    assert list(new["run_id"]) == list(wc["run_id"].iloc[:4])
    assert parse_time("2026-12-01T03:00:00.0004Z") == parse_time("2026-12-01T03:00:00.001Z")
    assert parse_time("2026-12-01T03:00:00.0005") == 1_796_094_000_001
    assert parse_time("2026-12-01T02:59:59.9996+00:00") == 1_796_094_000_000


def test_starts_ahead_of_this_clock_can_be_edited_as_the_warning_says(tmp_path, capsys):
    """A driver whose clock runs ahead of the machine running the CLI records starts in this
    machine's future: the job-changed warning's own command (its --before is the changed runs'
    start) must run, and a time past both now and the job's newest start is still refused."""
    from sparkpredict import suggest_executors
    from sparkpredict.cli import main
    from tests.test_regime_change import history, make_store

    runs = history(k=6, factor=1.6, seed=3)
    minute = 60_000
    # one run a minute, the 31st (the first changed one) 5 minutes ahead of this clock
    runs["start_ms"] = int(time.time() * 1000) + 5 * minute + (runs.index - 30) * minute
    runs["updated_ms"] = runs["start_ms"]
    path = make_store(tmp_path / "s", runs)
    warned = [w for w in suggest_executors("etl", "40GB", deadline_s="10m", store=path).warnings
              if "the job changed" in w]
    command = warned[0].split("`")[1]
    assert main(command.split()[1:]) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.splitlines()[-1] == f"store {path}: 30 runs edited"
    status = store_mod.open(path).runs().set_index("run_id")["status"]
    assert set(status[status == "excluded"].index) == set(runs["run_id"][:30])
    # a minute past the newest start is in the future; --after that start takes the newest run
    newest = int(runs["start_ms"].max())
    files = _files(Path(path))
    late = format_time(newest + minute, ms_precision=True)
    assert main(["store", "edit", "--exclude", "--job", "etl", "--after", late, "--store", path]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"error: --after {format_time(newest + minute)} is in the future (now "), err
    assert err[0].endswith(f"; the job's newest run started at {format_time(newest)})"), err
    assert err[1].startswith("fix: give a time at or before now"), err
    assert _files(Path(path)) == files
    last = store_mod.edit_runs_by_time(path, "etl", after=format_time(newest, ms_precision=True))
    assert list(last["run_id"]) == [runs["run_id"].iloc[-1]]


@pytest.mark.parametrize("ms", [-62_135_596_800_000, -1, 0, 1_796_094_000_123, 253_402_300_799_999])
def test_a_time_at_the_edges_of_the_calendar_reads_back_as_written(ms):
    # year 1 had been written "1-01-01T00:00:00Z" (strftime's %Y), which parse_time refused
    assert parse_time(format_time(ms, ms_precision=True)) == ms
    assert parse_time(format_time(ms)) == ms // 1000 * 1000
    assert format_time(ms)[:4] in ("0001", "1969", "1970", "2026", "9999")


def test_a_time_s_fraction_offset_and_date_read_exactly():
    # nanoseconds, as some tools write them, round up to the next ms only when past it
    assert parse_time("2026-12-01T03:00:00.123000000Z") == 1_796_094_000_123
    assert parse_time("2026-12-01T03:00:00.123000001Z") == parse_time("2026-12-01T03:00:00.1234567") == 1_796_094_000_124
    assert parse_time("1969-12-31T23:59:59.999") == -1 and parse_time("0001-01-01") == -62_135_596_800_000
    assert parse_time("2026-12-01T08:30+05:30") == parse_time("2026-12-01T03:00Z") == parse_time("2026-12-01T03:00")
    # a float ms is floored to its ms before the second is taken (the float timestamp had
    # rounded 1999.9999 ms up to second 2 and printed 00:00:02.999)
    assert format_time(1999.9999, ms_precision=True) == "1970-01-01T00:00:01.999Z"
    assert format_time(-0.5, ms_precision=True) == "1969-12-31T23:59:59.999Z"
    assert format_time(float("nan")) == "nan epoch ms (no date)"   # a store's garbage, no traceback
    for bad, said in [("2026-12-01Z", "cannot read"), ("2026-12-01+05:30", "cannot read"),
                      ("0001-01-01T00:00+05:30", "outside the years 1 to 9999"),
                      ("9999-12-31T23:59:59-05:30", "outside the years 1 to 9999"),
                      ("9999-12-31T23:59:59.9999", "outside the years 1 to 9999")]:
        with pytest.raises(InputError, match=said):
            parse_time(bad)


@pytest.mark.parametrize("args", [["--before", "9999-12-31T23:59:59-05:30"], ["--after", "0001-01-01T00:00+05:30"]])
def test_a_time_past_the_calendar_is_an_error_not_a_traceback(hist, capsys, args):
    from sparkpredict.cli import main

    assert main(["store", "edit", "--exclude", "--job", "wordcount", *args, "--store", str(hist)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f"error: --{args[0][2:]}: '{args[1]}' lies outside the years 1 to 9999 in UTC",
                   "fix: give a time from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z"], err
