"""``sparkpredict ingest PATH... [--store S] [--job NAME] [--json]``: backfill the store from Spark event logs.

``--job NAME`` records every run this call stores under that job, whatever its log says; a log
whose run is already stored is skipped and its run keeps its job (the skip warns when they differ).
When 256 small batches arrived in a local store since its last compaction, the ingest then
merges them (``store compact``'s defaults; ``--no-compact``: not).

Exit status: 0 when every log was ingested, already in the store, or not written yet (an
``.inprogress`` log of an application that has just started: skipped), 1 when some log could not
be read (the others were still ingested), an ``.inprogress`` log without its start unwritten for
an hour among them (its application died before it started), 2 for a user mistake (missing
path, bad store).
With ``--json`` stdout is JSON in every case: the report (a log that failed is listed in
``files`` with its ``error`` and ``fix``), or ``{"error": ..., "fix": ...}`` for a user mistake, whose
``error:``/``fix:`` lines still go to stderr. Stopped by Ctrl-C (exit 130), an ingest keeps the
logs it stored before the one it was reading, and says how many (``--json``: the report so far,
with ``"error": "interrupted"`` and the ``fix``); a rerun continues, skipping them.
"""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from .store_cmd import add_no_compact

if TYPE_CHECKING:
    from ..capture.eventlog_ingest import IngestReport


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "ingest", help="record past runs from Spark event logs",
        description="Read Spark event logs (files, rolling eventlog_v2_* folders or whole "
                    "spark.eventLog.dir folders; plain, zstd, lz4, snappy, lzf, or gzipped after Spark wrote them) into the history "
                    "store. Logs already ingested and unchanged are skipped.")
    p.add_argument("paths", nargs="+", metavar="PATH", help="event-log file or folder")
    p.add_argument("--store", help="history store (default: spark.sparkpredict.store of spark-defaults.conf, else $SPARKPREDICT_STORE, else ~/.sparkpredict/store)")
    p.add_argument("--job", metavar="NAME",
                   help="job name of every run this call stores, instead of each log's "
                        "spark.sparkpredict.job or app name (runs already stored keep theirs)")
    add_no_compact(p, "afterwards")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    import json

    from ..capture.eventlog_ingest import ingest_event_logs
    from . import printed_here
    from .store_cmd import compact_lines, compaction_doc

    try:
        with printed_here("sparkpredict.capture.eventlog", args.verbose):  # each failure: below
            report = ingest_event_logs(args.paths, store=args.store, job=args.job, compact=args.compact)
    except KeyboardInterrupt as exc:
        return _interrupted(args, exc)
    if args.json:
        print(json.dumps(report.to_dict() | compaction_doc(report.compaction), indent=2))
    else:
        _print_logs(report)
        print(_summary(report))
        for line in compact_lines(report.compaction) if report.compaction else []:
            print(line)
    return 1 if report.files_failed else 0


def _print_logs(report: IngestReport) -> None:
    from ..units import plural

    for line in report.repairs:
        print(f"repaired  {report.store}: {line}")
    for f in report.files:
        if f.outcome == "ingested":
            again = f", replacing its stored copy ({f.replaced})" if f.replaced else ""
            print(f"ingested  {f.path}: run {f.run_id} ({f.status}, {plural(f.stages or 0, 'stage')}, "
                  f"{plural(f.tasks or 0, 'task')}){again}")
        elif f.outcome == "exists":
            print(f"skipped   {f.path}: run {f.run_id} already in the store ({f.status})")
        elif f.outcome == "unchanged" and f.warnings:  # else quiet: the summary counts it
            print(f"skipped   {f.path}: unchanged since ingested as run {f.run_id} ({f.status})")
        elif f.outcome == "pending":
            print(f"skipped   {f.path}: not written yet (its application has just started); a later "
                  "ingest reads it")
        elif f.outcome == "failed":
            err = f.error or "failed"
            print(f"FAILED    {err if err.startswith(str(f.path)) else f'{f.path}: {err}'}")
            if f.fix:
                print(f"  fix: {f.fix}")
        for w in f.warnings:
            print(f"  warning: {w}")


def _summary(report: IngestReport) -> str:
    from ..units import plural

    dups = f" ({plural(len(report.duplicates), 'duplicate path')} ignored)" if report.duplicates else ""
    return (f"{plural(report.files_seen, 'log')}: {report.files_ingested} ingested{_replacements(report)}, {report.files_unchanged} "
            f"unchanged, {report.files_existing} already in the store, {report.files_failed} failed"
            f"{f', {report.files_pending} not written yet' if report.files_pending else ''} -> {report.store if report.store_exists else f'nothing stored, no store made at {report.store}'}"
            f"{dups}")


def _replacements(report: IngestReport) -> str:
    """`` (2 replacing stored copies: 2 stored before sparkpredict 0.4.0 recorded its scans'
    files)``: an upgrade re-reads the logs older releases ingested, and the user hears how many
    of the runs it counts as ingested were in the store already, and why they were read again."""
    from ..capture.eventlog_ingest import REPLACED_BECAUSE

    if not report.runs_replaced:
        return ""
    whys: dict[str, int] = {}
    for f in report.files:
        if f.outcome == "ingested" and f.replaced:
            why = REPLACED_BECAUSE.get(f.replaced_why or "", "another copy")
            whys[why] = whys.get(why, 0) + 1
    copies = "stored copy" if report.runs_replaced == 1 else "stored copies"
    return (f" ({report.runs_replaced} replacing {copies}: "
            + ", ".join(f"{n} {why}" for why, n in whys.items()) + ")")


def _interrupted(args: argparse.Namespace, exc: KeyboardInterrupt) -> int:
    """Ctrl-C (or SIGTERM: Terminated) during an ingest: the logs dealt with before it are
    stored, each whole, and the user is told so, as JSON too where asked for: a long ingest
    stopped after hundreds of logs said only "interrupted", and --json printed nothing."""
    import json
    import sys

    from ..capture.eventlog_ingest import partial_report

    signum = getattr(exc, "signum", None)
    what = "interrupted" if signum is None else f"terminated (signal {signum})"
    report = partial_report(exc)
    if getattr(exc, "ingest_compacting", False) and report is not None:
        said = (f"{what} while merging the store's small batches, after {_summary(report)}: every log "
                "was stored")
        fix = "run `sparkpredict store compact` (or the next ingest) to merge them"
    elif report is None or not report.files:
        repaired = f" (its {len(report.repairs)} repair(s) of the store were made)" if report and report.repairs else ""
        said, fix = f"{what} before the first log was read: no log was stored{repaired}", "rerun the same command"
    else:
        said = (f"{what} after {_summary(report)}; the log being read then was not stored (each "
                "log is stored whole or not at all)")
        fix = "rerun the same command to continue: the logs already stored are skipped as unchanged"
    if args.json:
        print(json.dumps({"error": what, "fix": fix} | (report.to_dict() if report is not None else {}), indent=2))
    elif report is not None:
        _print_logs(report)
    print(f"{said}\nfix: {fix}", file=sys.stderr)
    return 130 if signum is None else 128 + signum
