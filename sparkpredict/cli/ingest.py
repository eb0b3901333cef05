"""``sparkpredict ingest PATH... [--store S] [--job NAME] [--json]``: backfill the store from Spark event logs.

``--job NAME`` records every run this call stores under that job, whatever its log says; a log
whose run is already stored is skipped and its run keeps its job (the skip warns when they differ).
When 256 small batches arrived in a local store since its last compaction, the ingest then
merges them (``store compact``'s defaults; ``--no-compact``: not).

Exit status: 0 when every log was ingested or already in the store, 1 when some log could not
be read (the others were still ingested), 2 for a user mistake (missing path, bad store).
With ``--json`` stdout is JSON in every case: the report (a log that failed is listed in
``files`` with its ``error`` and ``fix``), or ``{"error": ..., "fix": ...}`` for a user mistake, whose
``error:``/``fix:`` lines still go to stderr.
"""
from __future__ import annotations

import argparse

from .store_cmd import add_no_compact


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "ingest", help="record past runs from Spark event logs",
        description="Read Spark event logs (files, rolling eventlog_v2_* folders or whole "
                    "spark.eventLog.dir folders; plain, zstd, lz4, snappy or lzf) into the history "
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
    from ..units import plural
    from . import printed_here
    from .store_cmd import compact_lines, compaction_doc

    with printed_here("sparkpredict.capture.eventlog", args.verbose):  # each failure: below
        report = ingest_event_logs(args.paths, store=args.store, job=args.job, compact=args.compact)
    if args.json:
        print(json.dumps(report.to_dict() | compaction_doc(report.compaction), indent=2))
    else:
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
            elif f.outcome == "failed":
                err = f.error or "failed"
                print(f"FAILED    {err if err.startswith(str(f.path)) else f'{f.path}: {err}'}")
                if f.fix:
                    print(f"  fix: {f.fix}")
            for w in f.warnings:
                print(f"  warning: {w}")
        dups = f" ({plural(len(report.duplicates), 'duplicate path')} ignored)" if report.duplicates else ""
        print(f"{plural(report.files_seen, 'log')}: {report.files_ingested} ingested, {report.files_unchanged} "
              f"unchanged, {report.files_existing} already in the store, {report.files_failed} failed "
              f"-> {report.store if report.store_exists else f'nothing stored, no store made at {report.store}'}"
              f"{dups}")
        for line in compact_lines(report.compaction) if report.compaction else []:
            print(line)
    return 1 if report.files_failed else 0
