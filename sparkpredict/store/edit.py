"""Corrections to runs already recorded: leave a run out of training (one slowed by a noisy
neighbour), take it back, move it to another job (recorded under the wrong
``spark.sparkpredict.job``), or give it its input size (an event log that declared none).

The store stays append-only: an edit is one batch (:meth:`Store.append`) of copies of the runs'
latest ``runs`` rows with the fields changed and a later ``updated_ms``, which supersede the
earlier rows as every reader takes a run's latest row. Nothing is rewritten or deleted, so the
rows as captured stay in the store (``Store.read("runs", all_rows=True)``), and stage, task and
executor rows, which carry no job or size of their own, are not copied. Every cache of derived
results keys on :meth:`Store.version`, which the new batch changes, and the registry's models
on their runs' ``updated_ms``: the edited jobs are refit on their next use or retrain.

>>> from sparkpredict import store
>>> store.edit_runs("/tmp/history", ["app-1"], excluded=True)     # doctest: +SKIP
"""
from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..config import check_job_name, plain_job_name
from ..errors import InputError
from ..units import is_bool, plural

if TYPE_CHECKING:
    import pandas as pd

    from .io import Store

#: The status of a run left out of training; its earlier rows keep the one it ended with.
EXCLUDED = "excluded"
#: What an edit may change, in the order a change is told.
EDITED_FIELDS = ("status", "job", "input_bytes", "input_bytes_source")
#: A run whose writer may still add rows, which would supersede the edit.
_UNFINISHED = ("running",)
_JOB_FIX = "give the job to move the runs to, e.g. --job nightly-etl"


def edit_runs(store: Store | str | Any, run_ids: Iterable[str] | str, *, job: str | None = None,
              input_bytes: float | str | None = None, excluded: bool | None = None,
              ended: bool = False) -> pd.DataFrame:
    """Correct runs already in a history store, all of them in one atomic batch.

    Parameters
    ----------
    store : Store or str
        The history store (a :class:`~sparkpredict.store.io.Store`, or its path or URI).
    run_ids : list of str
        The runs to edit (a single id may be given as a string). Each one must change.
    job : str, optional
        Move the runs to this job (the runs table, the models and the advice read it from then on).
    input_bytes : int or str, optional
        The runs' input size, in bytes or human units (``"300GB"``, ``"1.5TiB"``); recorded as
        declared (``input_bytes_source = "declared"``).
    excluded : bool, optional
        True: leave the runs out of training (status ``excluded``). False: take excluded runs
        back, with the status they had before (their latest row that is not excluded).
    ended : bool
        Edit runs whose last row still says ``running`` (refused otherwise: a writer still
        running would record rows that supersede the edit). For a run whose driver is gone and
        will never record its end: one killed with SIGKILL, or lost with its machine.

    Returns
    -------
    pandas.DataFrame
        The rows written, one per run, in the store's ``runs`` schema.

    Raises
    ------
    InputError
        Nothing to change, a bad size or job name, a run not in the store, a run still running,
        ``excluded=False`` for a run that is not excluded, or a run the edit would leave as it
        is. Nothing is written then.
    StoreError
        No store at ``store``, or it cannot be written.
    """

    from . import io as store_io

    ids = _check_ids(run_ids)
    size = _check_args(job, input_bytes, excluded, ended)
    st = store if hasattr(store, "append") else store_io.open(store)
    # read and append under the writer lock: two edits of one run at once each copied its
    # latest row, and the later undid the other (both said "1 run edited")
    with st.writer_lock("edit"):  # type: ignore[union-attr]
        if isinstance(job, str) and not plain_job_name(job):
            # a job the listener recorded from an app name ("nightly etl "): its runs are
            # given more as they are, under the name the store holds
            known = set(st.read("runs", columns=["job"])["job"].dropna())  # type: ignore[union-attr]
            check_job_name(job, _JOB_FIX, known=known)
        return _edit(st, ids, job, size, excluded, ended)


def edit_runs_by_time(store: Store | str | Any, job: str, *, before: Any = None, after: Any = None,
                      excluded: bool = True) -> pd.DataFrame:
    """Exclude (or include) the runs of ``job`` that started before ``before`` and/or at or
    after ``after``, all of them in one atomic batch, as :func:`edit_runs` edits runs by id.

    For a job that changed (a new release, other machines, a Spark upgrade): its runs before the
    change are left out of training with ``before=`` the change's time, as the advice's warning
    names it (``docs/advice.md``); ``after=`` leaves out the runs from a time on instead (a
    passing slowdown). ``before`` and ``after`` together take the runs between them.

    Parameters
    ----------
    store : Store or str
        The history store (a :class:`~sparkpredict.store.io.Store`, or its path or URI).
    job : str
        The job whose runs to take, as the store records it.
    before, after : str, datetime or date
        An ISO date (``"2026-12-01"``: its midnight) or date and time (``"2026-12-01T03:00"``),
        UTC unless an offset is given (``"...Z"``, ``"...+02:00"``); a run is taken when its
        ``start_ms`` is before ``before`` / not before ``after``. At least one; neither may lie
        in the future, past the job's newest start too (a start ahead of this machine's clock).
    excluded : bool
        True (default): exclude the job's succeeded runs in that time. False: take back its
        excluded runs in that time, with the status each had. Runs of other statuses (failed,
        running) are left as they are.

    Returns
    -------
    pandas.DataFrame
        The rows written, one per run, in the store's ``runs`` schema.

    Raises
    ------
    InputError
        No job or time given, a time that is unreadable or later than both now and the job's
        newest start, ``after`` not before ``before``, a job the store does not hold, or no run
        to change in that time. Nothing is written then.
    StoreError
        No store at ``store``, or it cannot be written.
    """
    from . import io as store_io

    if not isinstance(job, str) or not job.strip():
        raise InputError(f"job {job!r} is no job name" if job is not None else "no job given: a time "
                         "selects the runs of one job", "give the job whose runs to take, e.g. --job nightly-etl")
    window = _check_window(before, after)
    if not isinstance(excluded, bool):
        raise InputError(f"excluded={excluded!r} is neither True nor False",
                         "pass excluded=True to exclude runs, excluded=False to include them again")
    st = store if hasattr(store, "append") else store_io.open(store)
    with st.writer_lock("edit"):  # type: ignore[union-attr]
        ids = _runs_in_window(st, job, window, EXCLUDED if excluded is False else "succeeded")
        return _edit(st, ids, None, None, excluded, False)


def _check_window(before: Any, after: Any) -> tuple[int | None, int | None, str]:
    """(before ms, after ms, the window as said in messages), the times refused where they
    cannot be meant: unreadable, or an empty window (one in the future: :func:`_runs_in_window`)."""
    from ..units import format_time, parse_time

    if before is None and after is None:
        raise InputError("no time given to select runs by",
                         "give --before TIME (the runs that started before it) and/or --after TIME")
    out: dict[str, int | None] = {"before": None, "after": None}
    for name, value in (("before", before), ("after", after)):
        if value is None:
            continue
        try:
            out[name] = parse_time(value)
        except InputError as exc:
            raise InputError(f"--{name}: {exc.message}", exc.fix) from exc
    b, a = out["before"], out["after"]
    if b is not None and a is not None and a >= b:
        raise InputError(f"--after {format_time(a)} is not before --before {format_time(b)}: no run "
                         "started in between", "give --after an earlier time than --before")
    said = " and ".join(f"{'before' if n == 'before' else 'at or after'} {format_time(v)}"
                        for n, v in (("after", a), ("before", b)) if v is not None)
    return b, a, said


def _runs_in_window(st: Any, job: str, window: tuple[int | None, int | None, str], status: str) -> list[str]:
    """The ids of ``job``'s runs of ``status`` whose start lies in ``window``, oldest first; an
    error naming what the job has when there is none."""
    import difflib

    import pandas as pd

    from ..config import shown_job
    from ..units import format_time

    before, after, said = window
    runs = st.read("runs", columns=["run_id", "job", "status", "start_ms"])
    mine = runs[runs["job"] == job]
    if mine.empty:
        jobs = sorted(str(j) for j in runs["job"].dropna().unique())
        close = difflib.get_close_matches(job, jobs, n=1, cutoff=0.6)
        hint = (f"did you mean {close[0]!r}? " if close else "") + (
            "`sparkpredict store summary` lists its jobs" if jobs else "record runs first")
        raise InputError(f"no job {shown_job(job)} in store {st.path!r}; nothing was written", hint)
    start = pd.to_numeric(mine["start_ms"], errors="coerce")
    _check_not_future(before, after, int(start.max()) if start.notna().any() else None)
    inside = start.notna()
    if before is not None:
        inside &= start < before
    if after is not None:
        inside &= start >= after
    # assigned before the filter: a Series assigned to an empty frame gave it the Series' rows
    taken = mine.assign(_ms=start)[inside & (mine["status"] == status)].sort_values("_ms", kind="stable")
    if taken.empty:
        what = "succeeded" if status == "succeeded" else "excluded"
        span = (f"its {plural(len(mine), 'run')} started from {format_time(start.min())} to "
                f"{format_time(start.max())}" if start.notna().any() else
                f"its {plural(len(mine), 'run')} recorded no start")
        others = int((inside & (mine["status"] != status)).sum())
        also = f"; {others} other run{'s' if others != 1 else ''} in that time {'are' if others != 1 else 'is'} " \
               f"not {what}" if others else ""
        raise InputError(f"no {what} run of {shown_job(job)} started {said} ({span}{also}); nothing was written",
                         "check the time (UTC unless an offset is given); `sparkpredict store summary` "
                         "lists the latest runs with their starts")
    return [str(r) for r in taken["run_id"]]


def _check_not_future(before: int | None, after: int | None, newest_ms: int | None) -> None:
    """Refuse a time later than both now and the job's newest start: a year mistyped (2062)
    would make --before take every run of the job, --after none. A start ahead of this clock
    (the driver's host runs ahead of this machine) is no mistake, and the job-changed
    warning's --before names such a start."""
    from ..units import format_time

    now = int(time.time() * 1000)
    limit = max(now, newest_ms if newest_ms is not None else now)
    for name, ms in (("before", before), ("after", after)):
        if ms is not None and ms > limit:
            fine = ms // 1000 == limit // 1000  # to the ms where seconds would say the same time
            ahead = (f"; the job's newest run started at {format_time(newest_ms, ms_precision=fine)}"
                     if newest_ms is not None and newest_ms > now else "")
            raise InputError(f"--{name} {format_time(ms, ms_precision=fine)} is in the future "
                             f"(now {format_time(now)}{ahead})",
                             "give a time at or before now, in UTC unless an offset is given "
                             "(e.g. 2026-12-01T03:00:00+02:00)")


def _edit(st: Any, ids: list[str], job: str | None, size: int | None, excluded: bool | None,
          ended: bool) -> pd.DataFrame:
    import pandas as pd
    import pyarrow as pa

    from . import io as store_io
    from . import schema as S

    rows = st.read("runs", form="arrow", run_ids=ids, all_rows=True)
    if not isinstance(rows, pa.Table):  # pragma: no cover - form="arrow" gives Arrow
        raise TypeError("expected an Arrow table")
    history = rows.to_pandas()
    latest = store_io._latest_run_rows(rows).to_pandas().set_index("run_id", drop=False) \
        if rows.num_rows else history
    _check_known(st, ids, set(latest["run_id"]))
    now_ms = int(time.time() * 1000)
    new_rows, unchanged = [], []
    for rid in ids:
        old = latest.loc[rid]
        if old["status"] in _UNFINISHED and not ended:
            raise InputError(f"run {rid!r} is still running: its writer may still record rows that "
                             "would supersede this edit",
                             "edit it once it has ended (`sparkpredict store summary` shows its status); "
                             "if its driver is gone and will never record its end (killed with SIGKILL, "
                             "lost with its machine), add --ended (ended=True from Python)")
        new = old.copy()
        mine = history[history["run_id"] == rid]
        if excluded is True:
            new["status"] = EXCLUDED
        elif excluded is False:
            new["status"] = _status_before_exclusion(rid, old, mine)
        if job is not None:
            new["job"] = job
        if size is not None:
            new["input_bytes"], new["input_bytes_source"] = size, "declared"
        if not changes(old, new):
            unchanged.append(rid)
            continue
        # Later than every row of the run, even one stamped by a clock ahead of this one's:
        # the latest row wins, and a tie would go to whichever batch sorts last.
        stamps = pd.to_numeric(mine["updated_ms"], errors="coerce").dropna()
        new["updated_ms"] = max(now_ms, int(stamps.max()) + 1 if len(stamps) else now_ms)
        new_rows.append(new)
    if unchanged:
        asked = "; ".join(_asked(job, size, excluded))
        raise InputError(f"{plural(len(unchanged), 'run')} would not change ({asked} already): "
                         f"{', '.join(unchanged)}; nothing was written",
                         f"leave {'it' if len(unchanged) == 1 else 'them'} out of the edit")
    table = S.conform("runs", pa.Table.from_pandas(pd.DataFrame(new_rows), preserve_index=False))
    st.append({"runs": table}, batch_id=store_io.new_batch_id("edit"))
    return table.to_pandas()


def changes(old: pd.Series | dict, new: pd.Series | dict) -> dict[str, tuple[Any, Any]]:
    """field -> (before, after) of the fields in :data:`EDITED_FIELDS` that differ."""
    out = {}
    for f in EDITED_FIELDS:
        a, b = _plain(old.get(f)), _plain(new.get(f))
        if a != b:
            out[f] = (a, b)
    return out


def _plain(v: Any) -> Any:
    """A JSON-ready value: NaN/None as None, numpy numbers as int (sizes are whole bytes)."""
    if v is None:
        return None
    try:
        if v != v:  # NaN  # noqa: PLR0124
            return None
    except (TypeError, ValueError):
        pass
    if isinstance(v, str):
        return v
    try:
        return int(v)
    except (TypeError, ValueError):
        return v


def _check_ids(run_ids: Iterable[str] | str) -> list[str]:
    if not isinstance(run_ids, (str, Iterable)):  # None was a TypeError from list()
        raise InputError(f"run_ids must be a run id or a list of them, got {run_ids!r}",
                         "give one or more run ids (`sparkpredict store summary` lists the latest runs)")
    ids = [run_ids] if isinstance(run_ids, str) else list(run_ids)
    if not ids:
        raise InputError("no run to edit", "give one or more run ids (`sparkpredict store summary` lists "
                                           "the latest runs)")
    bad = [r for r in ids if not isinstance(r, str) or not r.strip()]
    if bad:
        raise InputError(f"run id {bad[0]!r} is not a run id", "give run ids as `sparkpredict store "
                                                               "summary` lists them")
    return list(dict.fromkeys(ids))  # each run once, in the order given


def _check_args(job: str | None, input_bytes: float | str | None, excluded: bool | None,
                ended: bool = False) -> int | None:
    """The size in bytes (None when none is set), after refusing what cannot be written."""
    if job is None and input_bytes is None and excluded is None:
        raise InputError("no change asked for",
                         "give a new job (--job NAME), an input size (--input-size SIZE), "
                         "--exclude or --include")
    if excluded is not None and not isinstance(excluded, bool):
        raise InputError(f"excluded={excluded!r} is neither True nor False",
                         "pass excluded=True to exclude runs, excluded=False to include them again")
    if not is_bool(ended):  # ended="no" is a true string: it marked the runs ended
        raise InputError(f"ended={ended!r} is neither True nor False",
                         "pass ended=True to mark running runs as ended (with excluded=True)")
    if not isinstance(job, str) or not job.strip() or plain_job_name(job):  # else with the store's jobs
        check_job_name(job, _JOB_FIX)
    return None if input_bytes is None else parse_input_size(input_bytes)


def parse_input_size(text: float | str) -> int:
    """A run's input size in bytes, from bytes or human units (``300GB``, ``1.5TiB``), as
    ``suggest --input-size`` reads it; zero, negative or unreadable sizes are an InputError."""
    from ..units import parse_user_bytes

    return parse_user_bytes(text)


def _check_known(st: Any, ids: list[str], found: set[str]) -> None:
    import difflib
    import shlex

    missing = [r for r in ids if r not in found]
    if not missing:
        return
    known = [str(r) for r in st.read("runs", columns=["run_id"])["run_id"]]
    close = [m for r in missing for m in difflib.get_close_matches(r, known, n=3, cutoff=0.8)]
    names = ", ".join(repr(r) for r in missing)
    listed = f"`sparkpredict store summary --store {shlex.quote(st.path)}` lists the latest runs"
    hint = (f"did you mean {', '.join(dict.fromkeys(close))}? " if close else "") + listed
    if not known:
        hint = "record runs first (sparkpredict submit, demo or ingest)"
    raise InputError(f"no {'run' if len(missing) == 1 else 'runs'} {names} in store {st.path!r}; "
                     "nothing was written", hint)


def _status_before_exclusion(run_id: str, latest: pd.Series, rows: pd.DataFrame) -> str:
    """The status of the run's latest row that is not excluded (the store keeps every row)."""
    import pandas as pd

    if latest["status"] != EXCLUDED:
        raise InputError(f"run {run_id!r} is not excluded (its status is {latest['status']}): "
                         "there is nothing to include; nothing was written",
                         "--include takes back a run excluded with --exclude; `sparkpredict store "
                         "summary` lists the excluded runs")
    before = rows[rows["status"] != EXCLUDED].copy()
    before["_ms"] = pd.to_numeric(before["updated_ms"], errors="coerce")
    # the same order as the store's own choice of a run's latest row: by updated_ms, ties to
    # the later batch (rows come in batch order), a row without a time first
    before = before.sort_values("_ms", kind="stable", na_position="first")
    if before.empty or not isinstance(before["status"].iloc[-1], str):
        raise InputError(f"run {run_id!r} was excluded from its first row on: no earlier status "
                         "to restore; nothing was written",
                         "leave it excluded, or record the run again")
    return str(before["status"].iloc[-1])


def _asked(job: str | None, size: int | None, excluded: bool | None) -> list[str]:
    from ..units import format_bytes

    said = []
    if excluded is True:
        said.append("excluded")
    if job is not None:
        said.append(f"job {job!r}")
    if size is not None:
        said.append(f"declared input {format_bytes(size)}")
    return said


__all__ = ["EDITED_FIELDS", "EXCLUDED", "changes", "edit_runs", "edit_runs_by_time", "parse_input_size"]
