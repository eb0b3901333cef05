"""``sparkpredict store summary|clean|edit [--store S]``: what the history store holds, tidying
it, and correcting recorded runs."""
from __future__ import annotations

import argparse
import contextlib
import math
import sys
from collections.abc import Callable
from typing import Any

#: The most characters of a job name in the summary's tables: a 300-character name widened
#: every row to 300 (``--json`` keeps names whole).
JOB_COLUMN = 60


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("store", help="show what the history store holds, tidy it, correct runs",
                              description="Inspect, tidy and correct a sparkpredict history store.")
    sub = p.add_subparsers(dest="store_command", metavar="ACTION")
    s = sub.add_parser("summary", help="runs recorded, per job, with status and wall time",
                       description="Per job: runs recorded, how many succeeded, the median wall time "
                       "of the succeeded ones and the latest start; then the runs excluded from training "
                       "(`store edit --exclude`; counted in runs, not in ok), if any, and the latest "
                       "runs. Sizes in "
                       "one column share one unit system: binary (MiB) only when every size there is "
                       "a round number of binary units, else decimal (MB), as sizes are typed. With "
                       "--json: {store, runs, jobs: [{job, runs, runs_by_status, median_wall_ms (of "
                       "succeeded runs; null without one), input_bytes_min, input_bytes_max (over "
                       "runs that recorded an input), last_start_ms}], latest: [{run_id, job, status, "
                       "start_ms, input_bytes, executors, wall_ms, num_tasks}], excluded: [{run_id, "
                       "job}] (every run excluded from training, oldest first), lost: [{batch, tables, run_ids, fix}] (runs "
                       "no read sees, as a compacted batch's runs file is missing; also warned of on "
                       "stderr without --json)}, numbers in base units "
                       "(bytes, ms, epoch ms), null where nothing was recorded; an error is {error, "
                       "fix} on stdout.")
    s.add_argument("--store", help="history store path or URI (default: spark.sparkpredict.store of spark-defaults.conf, else $SPARKPREDICT_STORE, else ~/.sparkpredict/store)")
    s.add_argument("--last", type=int, default=10, help="list this many latest runs (default 10)")
    s.add_argument("--json", action="store_true", help="print the summary as JSON (described above)")
    s.set_defaults(func=_summary)
    c = sub.add_parser("clean", help="remove files of batches and retrains that were never committed",
                       description="Remove part files whose batch never got its runs file (a writer "
                       "died mid-commit), leftover .tmp files, and the files of batches that a "
                       "`store compact` replaced, so that plain spark.read.parquet "
                       "sees only committed rows, each once. sparkpredict's own readers skip them anyway. In the "
                       "model registry (_models), remove artifacts that no registry snapshot references "
                       "(a retrain killed before its commit, or models of snapshots pruned since) and "
                       "leftover .tmp files; an artifact of any kept snapshot, or of a retrain still "
                       "running, stays. What --older-than 0 would also take is counted on stderr: "
                       "files of a retrain marked running (a killed one's mark lasts a day) and files "
                       "younger than --older-than.")
    c.add_argument("--store", help="history store path or URI (default: spark.sparkpredict.store of spark-defaults.conf, else $SPARKPREDICT_STORE, else ~/.sparkpredict/store)")
    c.add_argument("--older-than", default="10m", metavar="AGE",
                   help="only files last modified this long ago, so a writer mid-commit is left "
                   "alone (default 10m); 0: every uncommitted file, whatever its age (only when "
                   "no writer is running)")
    c.add_argument("--dry-run", action="store_true", help="list what would be removed; remove nothing")
    c.set_defaults(func=_clean)
    k = sub.add_parser(
        "compact", help="merge small batches into few large ones, so that reads open few files",
        description="Rewrite the rows of consecutive small batches (the listener commits one or "
        "more per run, ingest one per log) as one batch of about --target-size, whose commit hides "
        "the batches it replaces in the same rename: readers see each row once, before, during "
        "and after. A read opens a file per batch and table: a store of 3,000 one-batch runs read "
        "each table in about 3 s here, and in 0.01 to 0.17 s compacted (benchmarks/RESULTS.md, "
        "store reads). Batches of runs still "
        "going (running, or an incomplete ingested log) are left alone, and so are batches of a "
        "run stored twice (the next ingest keeps one copy) and batches already half of --target-size. The replaced batches' files stay --keep (10m) for "
        "readers still reading them; this command or `store clean` removes them later. Holds the "
        "store's writer lock; on a remote store (no lock) run one compact, ingest or edit at a "
        "time. sparkpredicts from before this command, and plain spark.read.parquet, "
        "see the replaced rows twice until their files are removed. With --json: {store, dry_run, "
        "batches_before, batches_after, merged, written, merged_bytes, going, doubled, removed_files} (going, doubled: batches left alone for runs still going or stored twice); "
        "an error is {error, fix} on stdout.")
    k.add_argument("--store", help="history store path or URI (default: spark.sparkpredict.store of spark-defaults.conf, else $SPARKPREDICT_STORE, else ~/.sparkpredict/store)")
    k.add_argument("--target-size", default="64MB", metavar="SIZE",
                   help="size of a compacted batch, all its files together (default 64MB)")
    k.add_argument("--keep", default="10m", metavar="AGE",
                   help="how long the replaced batches' files stay for readers still reading them "
                        "(default 10m); 0: remove them now (only when nothing reads the store)")
    k.add_argument("--dry-run", action="store_true", help="say what would be merged; write nothing")
    k.add_argument("--json", action="store_true", help="print the outcome as JSON (described above)")
    k.set_defaults(func=_compact)
    e = sub.add_parser(
        "edit", help="correct recorded runs: exclude from training, include, move to a job, set input size",
        description="Correct runs already in the store, all in one atomic batch: --exclude leaves a "
        "run out of training (one slowed by a noisy neighbour; its status becomes excluded), "
        "--include takes it back with the status it had, --job moves it to another job (recorded "
        "under the wrong spark.sparkpredict.job), --input-size gives it its input size (recorded as "
        "declared: an ingested event log that declared none, of data made in memory, has 0). "
        "Nothing is rewritten or deleted: the edit adds a later copy of each run's row, which "
        "supersedes the earlier ones, and the rows as captured stay in the store; models refit "
        "from the edited runs on their next use (`sparkpredict retrain` updates the registry). "
        "Re-ingesting a run's log does not undo an edit: an unchanged log is skipped, and a "
        "changed log of a run already stored is skipped too (ingest replaces only a cut copy of a "
        "run that was not edited), so the edited row stays. Prints one line per run, old -> new; with --json: {store, "
        "runs: [{run_id, before: {field: value}, after: {field: value}}]}, the fields "
        "among status, job, input_bytes, input_bytes_source that changed; an error is {error, "
        "fix} on stdout. Every run named must change, or nothing is written. Instead of run ids, "
        "--job J with --before TIME and/or --after TIME takes the runs of job J that started before "
        "TIME / at or after it (TIME an ISO date or date and time, UTC unless an offset is given: "
        "2026-12-01, 2026-12-01T03:00:00Z), for --exclude (its succeeded runs) or --include (its "
        "excluded ones): a job that changed (a new release, other machines) leaves out its runs "
        "before the change, as the advice's warning names it.")
    e.add_argument("run_ids", nargs="*", metavar="RUN_ID", help="run to edit (as `store summary` lists them)")
    e.add_argument("--job", metavar="NAME",
                   help="move the runs to this job; with --before/--after, the job whose runs to take")
    e.add_argument("--before", metavar="TIME",
                   help="with --job J and --exclude/--include: J's runs that started before TIME (an ISO "
                        "date or date and time, UTC unless an offset is given, e.g. 2026-12-01T03:00:00Z)")
    e.add_argument("--after", metavar="TIME",
                   help="with --job J and --exclude/--include: J's runs that started at TIME or later")
    e.add_argument("--input-size", metavar="SIZE", help="the runs' input size, e.g. 300GB, 1.5TiB")
    e.add_argument("--exclude", action="store_true", help="leave the runs out of training")
    e.add_argument("--include", action="store_true",
                   help="take excluded runs back, with the status they had before --exclude")
    e.add_argument("--ended", action="store_true",
                   help="edit runs whose last row still says running, their driver gone for good "
                        "(killed with SIGKILL, lost with its machine): refused otherwise, since a "
                        "running writer's next row would supersede the edit")
    e.add_argument("--store", help="history store path or URI (default: spark.sparkpredict.store of spark-defaults.conf, else $SPARKPREDICT_STORE, else ~/.sparkpredict/store)")
    e.add_argument("--json", action="store_true", help="print the edits as JSON (described above)")
    e.set_defaults(func=_edit)
    from . import refuse_without_action

    refuse_without_action(p, "store", "add one: sparkpredict store summary (what it holds), store clean (remove "
                                      "what crashed writers left), store compact (merge small batches) "
                                      "or store edit RUN_ID (correct recorded runs)")


def store_summary(store: str | None = None):
    """(per-job table, runs table, store path, lost), the tables as pandas DataFrames. ``lost``:
    (batch, tables, run ids) of each compacted batch whose runs file is missing, whose runs
    the tables leave out (:meth:`~sparkpredict.store.Store.lost_copies`). Per job:
    runs, succeeded, runs_by_status (status -> count), last_start_ms, median_wall_ms (of
    succeeded runs only: a cancelled run's seconds are no runtime; NaN without one),
    input_bytes_min and input_bytes_max (over runs that recorded an input)."""
    from .. import store as store_mod

    st = store_mod.open(store)
    runs = st.runs()
    lost = st.lost_copies()
    if runs.empty:
        return runs, runs, st.path, lost
    ok = runs["status"] == "succeeded"
    recorded = runs["input_bytes"].where(runs["input_bytes"] > 0)
    per_job = runs.assign(ok_wall_ms=runs["wall_ms"].where(ok), recorded_input=recorded).groupby(
        "job", dropna=False, sort=True).agg(
        runs=("run_id", "size"),
        succeeded=("status", lambda s: int((s == "succeeded").sum())),
        runs_by_status=("status", lambda s: s.fillna("unknown").value_counts().sort_index().to_dict()),
        last_start_ms=("start_ms", "max"),
        median_wall_ms=("ok_wall_ms", "median"),
        input_bytes_min=("recorded_input", "min"),
        input_bytes_max=("recorded_input", "max")).reset_index()
    return per_job, runs, st.path, lost


def _summary(args: argparse.Namespace) -> int:
    import datetime as dt

    from ..config import shown_job
    from ..errors import InputError
    from ..features.runs import executors_and_cores
    from ..store.io import lost_runs_fix
    from ..units import format_duration, format_executors, plural

    if args.last < 1:  # pandas' tail(-3) would list all but 3, tail(0) none
        raise InputError(f"--last {args.last}: the number of latest runs to list must be at least 1",
                         "give --last 1 or more (default 10)")
    per_job, runs, path, lost = store_summary(args.store)
    latest = runs
    if not runs.empty:
        latest = runs.sort_values("start_ms").tail(args.last)
        latest = latest.assign(executors=executors_and_cores(latest)[0])
    if args.json:
        _print_summary_json(path, per_job, runs, latest, lost)
        return 0
    print(f"store {path}: {plural(len(runs), 'run')}")
    for batch, tables, run_ids in lost:
        # the one place a user looks for runs gone missing; a read would need a listing of
        # another table to tell this from a compaction committing, on every read
        shown = ", ".join(run_ids[:3]) + (", ..." if len(run_ids) > 3 else "")
        print(f"warning: {plural(len(run_ids), 'run')} ({shown}) missing from this summary and from every "
              f"read: the runs file of compacted batch {batch} is gone, its {', '.join(tables)} file(s) "
              f"hold their only copy; {lost_runs_fix(batch)}", file=sys.stderr)
    if runs.empty:
        return 0

    def when(ms: float) -> str:
        if not math.isfinite(ms):  # no start recorded (a runs row written by another tool)
            return "-"
        return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M")

    # names quoted where blanks or control characters would hide in the table, long ones cut
    jobs = per_job["job"].map(lambda j: shown_job(j, JOB_COLUMN))
    jw = max(3, *map(len, jobs))
    median_head = "median wall (succeeded)"
    print(f"\n{'job':<{jw}} {'runs':>5} {'ok':>5} {median_head:>{len(median_head)}}  last start (UTC)")
    for job, r in zip(jobs, per_job.itertuples()):
        wall = format_duration(r.median_wall_ms / 1000) if r.median_wall_ms == r.median_wall_ms else "-"
        print(f"{job:<{jw}} {r.runs:>5} {r.succeeded:>5} {wall:>{len(median_head)}}  {when(r.last_start_ms)}")
    _print_excluded(runs, args.last)
    print(f"\nlatest {plural(len(latest), 'run')}:")
    # columns as wide as their longest value: YARN ids and app names overflow fixed widths
    rw = max(6, *(len(str(x)) for x in latest["run_id"]))
    jobs = latest["job"].map(lambda j: shown_job(j, JOB_COLUMN))
    jw = max(3, *map(len, jobs))
    size_of = _bytes_column(latest["input_bytes"])
    # input and executors as the models read them (a local[N] run has one executor with N
    # slots, but a sweep asked it for N executors; dynamic allocation: the mean held)
    print(f"{'run_id':<{rw}} {'job':<{jw}} {'status':<10} {'input':>10} {'executors':>9} {'wall':>9} "
          f"{'tasks':>7}")
    for job, r in zip(jobs, latest.itertuples()):
        wall = format_duration(r.wall_ms / 1000) if r.wall_ms == r.wall_ms else "-"
        ex = format_executors(r.executors)
        size = size_of(r.input_bytes) if r.input_bytes == r.input_bytes and r.input_bytes > 0 else "-"
        nt = "-" if r.num_tasks != r.num_tasks else int(r.num_tasks)
        # a runs row without a status (another tool's file, a damaged one): as --json counts it
        status = r.status if isinstance(r.status, str) else "unknown"
        print(f"{r.run_id!s:<{rw}} {job:<{jw}} {status:<10} {size:>10} {ex:>9} {wall:>9} {nt:>7}")
    masters = latest["master"].astype(str) if "master" in latest else None
    if masters is not None and masters.str.fullmatch(r"local(\[.*\])?").any():
        # the store keeps local[N] as 1 executor of N cores: say why the column reads N
        print("executors as the models read them: local[N] as N one-core executors (threads of one "
              "driver), dynamic allocation as the mean held")
    return 0


def _print_excluded(runs: Any, last: int) -> None:
    """The runs left out of training, wherever they fall in time: the latest runs' listing
    would show only the recent ones, and the per-job counts none by name."""
    from ..config import shown_job
    from ..store.edit import EXCLUDED
    from ..units import plural

    out = runs[runs["status"] == EXCLUDED].sort_values("start_ms")
    if out.empty:
        return
    print(f"\nexcluded from training: {plural(len(out), 'run')} (`sparkpredict store edit RUN_ID "
          "--include` takes one back)")
    rw = max(6, *(len(str(x)) for x in out["run_id"]))
    for r in out.tail(last).itertuples():
        print(f"  {r.run_id!s:<{rw}} {shown_job(r.job, JOB_COLUMN)}")
    if len(out) > last:
        print(f"  ... and {len(out) - last} earlier (--last lists more)")


def _edit(args: argparse.Namespace) -> int:
    from .. import store as store_mod
    from ..errors import InputError
    from ..store.edit import changes, parse_input_size

    if args.exclude and args.include:
        raise InputError("--exclude and --include together: a run is either left out of training or not",
                         "give one of them")
    excluded = True if args.exclude else False if args.include else None
    if args.before is not None or args.after is not None:
        return _edit_by_time(args, excluded)
    if not args.run_ids:
        raise InputError("no run to edit", "give one or more run ids (`sparkpredict store summary` lists the "
                                           "latest runs), or --job NAME with --before/--after TIME")
    size = None
    if args.input_size is not None:
        try:
            size = parse_input_size(args.input_size)
        except InputError as exc:
            raise InputError(f"--input-size: {exc.message}", exc.fix) from exc
    st = store_mod.open(args.store)
    ids = list(dict.fromkeys(args.run_ids))
    before = st.read("runs", run_ids=ids).set_index("run_id", drop=False)
    new = store_mod.edit_runs(st, ids, job=args.job, input_bytes=size, excluded=excluded, ended=args.ended)
    edits = [(r["run_id"], changes(before.loc[r["run_id"]], r)) for r in new.to_dict("records")]
    return _print_edits(st.path, edits, args.json)


def _print_edits(store: str, edits: list, as_json: bool) -> int:
    """An edit's runs, ``[(run_id, {field: (before, after)})]``, one line each (a size given
    says its source with it, so the source's own change is not told apart), or as JSON."""
    import json

    from ..units import plural

    if as_json:
        print(json.dumps({"store": store, "runs": [
            {"run_id": rid, "before": {f: a for f, (a, _) in ch.items()},
             "after": {f: b for f, (_, b) in ch.items()}} for rid, ch in edits]}, indent=2))
        return 0
    for rid, ch in edits:
        print(f"{rid}: " + "; ".join(_told(f, a, b) for f, (a, b) in ch.items()
                                     if f != "input_bytes_source" or "input_bytes" not in ch))
    print(f"store {store}: {plural(len(edits), 'run')} edited")
    return 0


def _edit_by_time(args: argparse.Namespace, excluded: bool | None) -> int:
    """``store edit --job J --before/--after TIME --exclude|--include``: the job's runs by their
    start, in one batch, printed as an edit by id prints them."""
    from .. import store as store_mod
    from ..errors import InputError

    which = "--before" if args.before is not None else "--after"
    if args.run_ids:
        raise InputError(f"run ids and {which} together: the runs are given by id or selected by time",
                         f"give the run ids, or --job NAME with {which} TIME, not both")
    if args.job is None:
        raise InputError(f"{which} without --job: a time selects the runs of one job",
                         f"add --job NAME (the job whose runs to take), e.g. --job nightly-etl {which} {args.before or args.after}")
    if excluded is None:
        raise InputError(f"{which} selects runs to exclude or include, and neither was asked for",
                         "add --exclude (leave the runs out of training) or --include (take excluded ones back)")
    if args.input_size is not None or args.ended:
        flag = "--input-size" if args.input_size is not None else "--ended"
        raise InputError(f"{flag} with {which}: runs selected by time are only excluded or included",
                         f"give the runs by id for {flag} (`sparkpredict store summary` lists them)")
    st = store_mod.open(args.store)
    new = store_mod.edit_runs_by_time(st, args.job, before=args.before, after=args.after, excluded=excluded)
    # selected by status: succeeded ones excluded, excluded ones given back the status they had
    was = "succeeded" if excluded else "excluded"
    edits = [(r["run_id"], {"status": (was, r["status"])}) for r in new.to_dict("records")]
    return _print_edits(st.path, edits, args.json)


def _told(field: str, old: Any, new: Any) -> str:
    """One change, as ``status succeeded -> excluded`` or ``input 0 B -> 3 GB (declared)``."""
    from ..config import shown_job
    from ..units import format_bytes

    if field == "job":  # "job other -> nightly etl " hid the space the name ends in
        return f"job {shown_job(old)} -> {shown_job(new)}"
    if field == "input_bytes":
        def size(n: Any) -> str:
            return "none" if n is None or n <= 0 else format_bytes(n)
        return f"input {size(old)} -> {size(new)} (declared)"
    return f"{field} {'-' if old is None else old} -> {'-' if new is None else new}"


def _bytes_column(values: Any) -> Callable[[float], str]:
    """How to print the sizes of one column, in one unit system so that they compare as printed:
    decimal, as sizes are typed (``--sizes 2MB``) and generated (2 MB less a part line), unless
    every size is a round number of binary units (``8 MiB``), which decimal would blur."""
    import pandas as pd

    from ..units import byte_units_of, format_bytes, format_bytes_in

    sizes = [float(v) for v in values if not pd.isna(v) and v > 0]
    if sizes and all(byte_units_of(v) for v in sizes):
        return format_bytes  # none is a round decimal amount, so it writes each in binary units
    return lambda n: format_bytes_in(n, False)


def _print_summary_json(path: str, per_job: Any, runs: Any, latest: Any, lost: list) -> None:
    import json

    import pandas as pd

    def num(x: Any) -> int | float | None:
        """Base units as JSON numbers: whole ones as ints, NaN (nothing recorded) as null."""
        if pd.isna(x):
            return None
        return int(x) if float(x).is_integer() else float(x)

    def text(x: Any) -> str | None:
        return None if pd.isna(x) else str(x)

    jobs = [{"job": text(r.job), "runs": int(r.runs),
             "runs_by_status": {str(k): int(v) for k, v in r.runs_by_status.items()},
             "median_wall_ms": num(r.median_wall_ms),
             "input_bytes_min": num(r.input_bytes_min), "input_bytes_max": num(r.input_bytes_max),
             "last_start_ms": num(r.last_start_ms)} for r in per_job.itertuples()]
    rows = [{"run_id": text(r.run_id), "job": text(r.job), "status": text(r.status),
             "start_ms": num(r.start_ms),
             "input_bytes": num(r.input_bytes) if r.input_bytes == r.input_bytes and r.input_bytes > 0 else None,
             "executors": num(r.executors), "wall_ms": num(r.wall_ms), "num_tasks": num(r.num_tasks)}
            for r in latest.itertuples()]
    from ..store.edit import EXCLUDED

    # every one, as the text lists them: the runs `store edit --include` can take back
    out = runs[runs["status"] == EXCLUDED].sort_values("start_ms") if len(runs) else runs
    excluded = [{"run_id": text(r.run_id), "job": text(r.job)} for r in out.itertuples()]
    from ..store.io import lost_runs_fix

    missing = [{"batch": b, "tables": tables, "run_ids": ids, "fix": lost_runs_fix(b)} for b, tables, ids in lost]
    print(json.dumps({"store": str(path), "runs": len(runs), "jobs": jobs, "latest": rows,
                      "excluded": excluded, "lost": missing}, indent=2))


def _clean(args: argparse.Namespace) -> int:
    from .. import registry_commit
    from .. import store as store_mod

    age_s = _age(args.older_than)
    st = store_mod.open(args.store)
    # Two compactions that ran at once leave batches two compacted ones replace: their fix needs
    # the originals, which a clean would remove as replaced. Refused here, with that fix.
    st.visible_marks()
    # The writer lock keeps an ingest, edit or compaction of a local store from committing a
    # batch while its files are judged: with --older-than 0 a batch half written reads as a
    # crashed writer's, and its part files went after its commit mark was listed.
    # a dry run only lists, and must not wait behind a long ingest
    with contextlib.nullcontext() if args.dry_run else st.writer_lock("store clean"):
        replaced = set(st.replaced_files(age_s))  # told apart from a crashed writer's files
        if args.dry_run:
            found = registry_commit.orphans(st, age_s)
            paths = st.orphans(age_s) + found
            kept = _kept(st, paths, age_s, args.older_than)
        else:
            # the registry's first: a snapshot it cannot read stops the clean before anything is removed
            found = registry_commit.orphans(st, age_s)
            store_found = st.orphans(age_s)
            kept = _kept(st, store_found + found, age_s, args.older_than)
            paths = st.remove_orphans(age_s, store_found) + registry_commit.remove_orphans(st, age_s, found)
    verb = "would remove" if args.dry_run else "removed"
    n_replaced = sum(p in replaced for p in paths)
    # the registry's are no batch's: artifacts of snapshots pruned since were committed once
    registry = set(found)
    n_registry = sum(p in registry for p in paths)
    also = f", and {n_replaced} file(s) of batches a `store compact` replaced" if n_replaced else ""
    also += (f", and {n_registry} file(s) of the model registry no kept snapshot needs (artifacts of "
             "retrains that failed or whose snapshots were pruned, interrupted writes)" if n_registry else "")
    print(f"store {st.path}: {verb} {len(paths) - n_replaced - n_registry} uncommitted file(s){also}")
    for p in paths:
        print(f"  {p}")
    for line in kept:  # on stderr: stdout stays the list of what was removed
        print(line, file=sys.stderr)
    return 0


def _compact(args: argparse.Namespace) -> int:
    import json

    from .. import store as store_mod
    from ..errors import InputError
    from ..store.compact import compact
    from ..units import parse_user_bytes

    keep_s = _age(args.keep, "--keep", "removing the replaced batches' files now")
    try:
        target = parse_user_bytes(args.target_size)
    except InputError as exc:
        raise InputError(f"--target-size: {exc.message}", "give a size such as 64MB or 1GiB") from exc
    st = store_mod.open(args.store)
    r = compact(st, target_bytes=target, keep_s=keep_s, dry_run=args.dry_run)
    if args.json:
        print(json.dumps(compact_json(r)))
        return 0
    for line in compact_lines(r):
        print(line)
    return 0


def compact_json(r: Any) -> dict[str, Any]:
    """A :class:`~sparkpredict.store.compact.CompactResult` as ``store compact --json`` prints it
    (and ``retrain --compact --json`` under ``compaction``)."""
    from ..config import store_for_display

    return {"store": store_for_display(r.store), "dry_run": r.dry_run, "batches_before": r.batches_before,
            "batches_after": r.batches_after, "merged": r.merged, "written": r.written,
            "merged_bytes": r.merged_bytes, "going": r.going, "doubled": r.doubled,
            "removed_files": len(r.removed)}


def add_no_compact(p: Any, when: str, dest: str = "compact") -> None:
    """``--no-compact`` of a command that compacts a local store ``when`` (after its work, or
    before a retrain) once :data:`~sparkpredict.store.compact.AUTO_BATCHES` small batches arrived."""
    p.add_argument("--no-compact", dest=dest, action="store_false",
                   help=f"do not merge the store's small batches {when} (done when 256 arrived since "
                        "the last compaction, on a local store)")


def compaction_doc(r: Any) -> dict[str, Any]:
    """``{"compaction": ...}`` in the JSON of a retrain with ``--compact``, or of a submit or
    ingest that compacted the store (``store compact --json``'s keys); ``{}`` without one."""
    return {} if r is None else {"compaction": compact_json(r)}


def compact_lines(r: Any) -> list[str]:
    """What a compaction did, for a person (``store compact``, ``retrain --compact``)."""
    from ..config import store_for_display
    from ..units import format_bytes, format_duration, plural

    would = "would merge" if r.dry_run else "merged"
    where = f"store {store_for_display(r.store)}"
    if r.merged:
        opens = f"a reader {'would open' if r.dry_run else 'opens'} {plural(r.batches_after, 'batch', 'batches')}"
        # Only a batch an older sparkpredict's compaction wrote is merged alone: its rows of a
        # newer table lay in the files of the batches it replaced. It read "opens 2 batches, not 2"
        opens += (f", not {r.batches_before:,}" if r.batches_after != r.batches_before else
                  ", as before: it rewrote what an older sparkpredict's `store compact` merged, whose "
                  "rows of a table that version did not know (stage_scans) lay in the files of the "
                  "batches it replaced")
        lines = [(f"{where}: {would} {plural(r.merged, 'batch', 'batches')} ({format_bytes(r.merged_bytes)}) "
                  f"into {r.written}; {opens}")]
    else:
        why = "" if r.going or r.doubled else ": none is small and next to another small one"
        lines = [f"{where}: nothing to merge in its {plural(r.batches_before, 'batch', 'batches')}{why}"]
    if r.going:
        lines.append(f"left alone: {plural(r.going, 'batch', 'batches')} of runs still going; a later "
                     "compact takes them")
    if r.doubled:
        lines.append(f"left alone: {plural(r.doubled, 'batch', 'batches')} of runs stored twice; the next "
                     "`sparkpredict ingest` keeps one copy, and a later compact takes it")
    if r.removed:
        lines.append(f"{'would remove' if r.dry_run else 'removed'} {plural(len(r.removed), 'file')} of "
                     f"batches replaced over {format_duration(r.keep_s) if r.keep_s else '0s'} ago")
    if r.merged and r.keep_s > 0:
        lines.append(f"the replaced batches' files {'would stay' if r.dry_run else 'stay'} "
                     f"{format_duration(r.keep_s)} for readers still reading them; the next compact or "
                     "`store clean` removes them")
    return lines


def _kept(st: Any, taken: list[str], age_s: float, older_than: str) -> list[str]:
    """Lines on what ``--older-than 0`` would also take but this clean keeps, and why: files of
    a retrain marked running (a killed one keeps its marker, and so its artifacts, for a day),
    and files younger than ``--older-than``. Without them a dry run after a killed retrain said
    "would remove 0" and nothing of what stayed."""
    import datetime as dt

    from .. import registry_commit as RC

    if age_s <= 0:
        return []
    replaced = set(st.replaced_files(0)) - set(taken)
    kept = sorted(set(st.orphans(0) + RC.orphans(st, 0)) - set(taken) - replaced)
    owners = {p: RC.retrain_of(st, p) for p in kept}
    markers = {o[0]: p for p, o in owners.items() if o is not None and o[1]}
    by_retrain: dict[str, list[str]] = {rid: [] for rid in markers}
    young: list[str] = []
    for p in kept:
        o = owners[p]
        by_retrain.get(o[0] if o else "", young).append(p)
    lines = []
    for rid, files in by_retrain.items():
        info = st.fs.get_file_info(markers[rid])
        since = ("" if info.mtime_ns is None else " since " + dt.datetime.fromtimestamp(
            info.mtime_ns / 1e9, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"))
        lines.append(f"kept {len(files)} file(s) of retrain {rid}, marked running{since}; "
                     "pass --older-than 0 if that retrain is dead")
    if young:
        lines.append(f"kept {len(young)} uncommitted file(s) modified in the last {older_than.strip()}, "
                     "in case their writer is still at work; pass --older-than 0 if none is running")
    if replaced:
        lines.append(f"kept {len(replaced)} file(s) of batches a `store compact` replaced in the last "
                     f"{older_than.strip()}, for readers still reading them; pass --older-than 0 if "
                     "nothing reads the store")
    return lines


def _age(text: str, option: str = "--older-than", zero: str = "every uncommitted file whatever its age") -> float:
    """Seconds of ``--older-than`` (or ``option``); unlike a deadline, zero is meaningful here
    (every uncommitted file, whatever its age), which :func:`parse_duration` refuses."""
    import re

    from ..errors import InputError
    from ..units import parse_duration

    fix = f"give an age such as 10m or 2h, or 0 for {zero}"
    nought = re.fullmatch(r"\s*0*\.?0+\s*([a-zA-Z]*)\s*", text)
    if nought:  # "0", "0s", "0m": zero of a unit that parse_duration knows
        try:
            parse_duration("1" + nought.group(1))
            return 0.0
        except InputError:
            pass  # an unknown unit: parse_duration says so below, about the text as given
    if text.strip().startswith("-"):  # "-5m" read as unreadable, "-1" as not positive
        raise InputError(f"{option}: {text.strip()!r} is negative", fix)
    try:
        return parse_duration(text)
    except InputError as exc:
        raise InputError(f"{option}: {exc.message}", fix) from exc
