"""``sparkpredict store summary|clean [--store S]``: what the history store holds, and tidying it."""
from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("store", help="show what the history store holds",
                              description="Inspect a sparkpredict history store.")
    sub = p.add_subparsers(dest="store_command", metavar="ACTION")
    s = sub.add_parser("summary", help="runs recorded, per job, with status and wall time")
    s.add_argument("--store", help="history store path or URI (default: $SPARKPREDICT_STORE, else ~/.sparkpredict/store)")
    s.add_argument("--last", type=int, default=10, help="list this many latest runs (default 10)")
    s.set_defaults(func=_summary)
    c = sub.add_parser("clean", help="remove files of batches and retrains that were never committed",
                       description="Remove part files whose batch never got its runs file (a writer "
                       "died mid-commit) and leftover .tmp files, so that plain spark.read.parquet "
                       "sees only committed rows. sparkpredict's own readers skip them anyway. In the "
                       "model registry (_models), remove artifacts that no registry snapshot references "
                       "(a retrain killed before its commit, or models of snapshots pruned since) and "
                       "leftover .tmp files; an artifact of any kept snapshot, or of a retrain still "
                       "running, stays.")
    c.add_argument("--store", help="history store path or URI (default: $SPARKPREDICT_STORE, else ~/.sparkpredict/store)")
    c.add_argument("--older-than", default="10m", metavar="AGE",
                   help="only files last modified this long ago, so a writer mid-commit is left "
                   "alone (default 10m); 0: every uncommitted file, whatever its age (only when "
                   "no writer is running)")
    c.add_argument("--dry-run", action="store_true", help="list what would be removed; remove nothing")
    c.set_defaults(func=_clean)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def store_summary(store: str | None = None):
    """(per-job table, runs table) of the store, as pandas DataFrames."""
    from .. import store as store_mod

    st = store_mod.open(store)
    runs = st.runs()
    if runs.empty:
        return runs, runs, st.path
    per_job = runs.groupby("job", dropna=False).agg(
        runs=("run_id", "size"),
        succeeded=("status", lambda s: int((s == "succeeded").sum())),
        last_start_ms=("start_ms", "max"),
        median_wall_ms=("wall_ms", "median")).reset_index()
    return per_job, runs, st.path


def _summary(args: argparse.Namespace) -> int:
    import datetime as dt

    from ..errors import InputError
    from ..features.runs import executors_and_cores
    from ..units import format_bytes, format_duration

    if args.last < 1:  # pandas' tail(-3) would list all but 3, tail(0) none
        raise InputError(f"--last {args.last}: the number of latest runs to list must be at least 1",
                         "give --last 1 or more (default 10)")
    per_job, runs, path = store_summary(args.store)
    print(f"store {path}: {len(runs)} runs")
    if runs.empty:
        return 0

    def when(ms: float) -> str:
        return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M")

    jw = max(3, *(len(str(j)) for j in per_job["job"]))
    print(f"\n{'job':<{jw}} {'runs':>5} {'ok':>5} {'median wall':>12}  last start (UTC)")
    for r in per_job.itertuples():
        wall = format_duration(r.median_wall_ms / 1000) if r.median_wall_ms == r.median_wall_ms else "-"
        print(f"{r.job!s:<{jw}} {r.runs:>5} {r.succeeded:>5} {wall:>12}  {when(r.last_start_ms)}")
    latest = runs.sort_values("start_ms").tail(args.last)
    latest = latest.assign(executors=executors_and_cores(latest)[0])
    print(f"\nlatest {len(latest)} runs:")
    # columns as wide as their longest value: YARN ids and app names overflow fixed widths
    rw = max(6, *(len(str(x)) for x in latest["run_id"]))
    jw = max(3, *(len(str(x)) for x in latest["job"]))
    # input and executors as the models read them (a local[N] run has one executor with N
    # slots, but a sweep asked it for N executors; dynamic allocation: the mean held)
    print(f"{'run_id':<{rw}} {'job':<{jw}} {'status':<10} {'input':>10} {'executors':>9} {'wall':>9} "
          f"{'tasks':>7}")
    for r in latest.itertuples():
        wall = format_duration(r.wall_ms / 1000) if r.wall_ms == r.wall_ms else "-"
        ex = "-" if r.executors != r.executors else f"{r.executors:.3g}"  # NaN: none was recorded
        size = format_bytes(r.input_bytes) if r.input_bytes == r.input_bytes and r.input_bytes > 0 else "-"
        nt = "-" if r.num_tasks != r.num_tasks else int(r.num_tasks)
        print(f"{r.run_id!s:<{rw}} {r.job!s:<{jw}} {r.status:<10} {size:>10} {ex:>9} {wall:>9} {nt:>7}")
    return 0


def _clean(args: argparse.Namespace) -> int:
    from .. import registry_commit
    from .. import store as store_mod

    age_s = _age(args.older_than)
    st = store_mod.open(args.store)
    if args.dry_run:
        paths = st.orphans(age_s) + registry_commit.orphans(st, age_s)
    else:
        # the registry's first: a snapshot it cannot read stops the clean before anything is removed
        found = registry_commit.orphans(st, age_s)
        paths = st.remove_orphans(age_s) + registry_commit.remove_orphans(st, age_s, found)
    verb = "would remove" if args.dry_run else "removed"
    print(f"store {st.path}: {verb} {len(paths)} uncommitted file(s)")
    for p in paths:
        print(f"  {p}")
    return 0


def _age(text: str) -> float:
    """Seconds of ``--older-than``; unlike a deadline, zero is meaningful here (every
    uncommitted file, whatever its age), which :func:`parse_duration` refuses."""
    import re

    from ..errors import InputError
    from ..units import parse_duration

    fix = "give an age such as 10m or 2h, or 0 for every uncommitted file whatever its age"
    zero = re.fullmatch(r"\s*0*\.?0+\s*([a-zA-Z]*)\s*", text)
    if zero:  # "0", "0s", "0m": zero of a unit that parse_duration knows
        try:
            parse_duration("1" + zero.group(1))
            return 0.0
        except InputError:
            pass  # an unknown unit: parse_duration says so below, about the text as given
    try:
        return parse_duration(text)
    except InputError as exc:
        raise InputError(f"--older-than: {exc.message}", fix) from exc
