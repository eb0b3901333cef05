"""``sparkpredict report``: one self-contained HTML page with the store's plots and advice."""
from __future__ import annotations

import argparse
import sys

from . import confidence_arg


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report", help="write an HTML report: runtime curves, fit quality, stages, advice",
        description="Write one self-contained HTML page (plots embedded) for the jobs of a history "
                    "store: runtime against executors per input size with the fitted curves and "
                    "intervals, predicted against actual, the stage breakdown of the latest run, "
                    "and the current advice.")
    p.add_argument("--store", default=None, help="history store (default: spark.sparkpredict.store of spark-defaults.conf, else $SPARKPREDICT_STORE, else ~/.sparkpredict/store)")
    p.add_argument("--job", action="append", default=None, help="only this job (repeatable)")
    p.add_argument("--confidence", type=confidence_arg, default=0.9, help="interval confidence (default 0.9)")
    p.add_argument("--out", default="report.html",
                   help="HTML file to write, ending in .html or .htm (default report.html); missing folders above it are made")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    import contextlib

    from ..models.columns import check_confidence
    from ..report import build_report
    from ..units import plural
    from . import printed_here

    check_confidence(args.confidence)  # before the report's fits
    with contextlib.ExitStack() as held:
        # each job left unfitted, each run the model drops: a note below, once, not a log line too
        for logger in ("sparkpredict.models.persist", "sparkpredict.models.hybrid"):
            held.enter_context(printed_here(logger, args.verbose))
        res = build_report(args.out, store=args.store, jobs=args.job, confidence=args.confidence)
    for w in res.warnings:
        print(f"warning: {w}", file=sys.stderr)
    for s in res.sections:
        for n in s.notes:
            print(f"note: {s.job}: {n}", file=sys.stderr)
    print(f"report of {plural(len(res.sections), 'job')} ({', '.join(res.jobs)}) written to {res.path}")
    if res.left_out_jobs:
        print("left out, no succeeded run: " + "; ".join(f"{j} ({why})" for j, why in res.left_out_jobs.items()))
    return 0
