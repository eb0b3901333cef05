"""``sparkpredict report``: one self-contained HTML page with the store's plots and advice."""
from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report", help="write an HTML report: runtime curves, fit quality, stages, advice",
        description="Write one self-contained HTML page (plots embedded) for the jobs of a history "
                    "store: runtime against executors per input size with the fitted curves and "
                    "intervals, predicted against actual, the stage breakdown of the latest run, "
                    "and the current advice.")
    p.add_argument("--store", default=None, help="history store (default: $SPARKPREDICT_STORE, else ~/.sparkpredict/store)")
    p.add_argument("--job", action="append", default=None, help="only this job (repeatable)")
    p.add_argument("--confidence", type=float, default=0.9, help="interval confidence (default 0.9)")
    p.add_argument("--out", default="report.html", help="HTML file to write (default report.html)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from ..models.columns import check_confidence
    from ..report import build_report

    check_confidence(args.confidence)  # before the report's fits
    res = build_report(args.out, store=args.store, jobs=args.job, confidence=args.confidence)
    for w in res.warnings:
        print(f"warning: {w}", file=sys.stderr)
    for s in res.sections:
        for n in s.notes:
            print(f"note: {s.job}: {n}", file=sys.stderr)
    print(f"report of {len(res.sections)} job(s) ({', '.join(res.jobs)}) written to {res.path}")
    return 0
