"""``sparkpredict demo``: a small sweep, a model, advice for a larger input, and the report."""
from __future__ import annotations

import argparse
import shlex
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo", help="the whole loop in ~2 minutes: sweep, fit, advise, report",
        description="Run a small word-count sweep on local Spark (each run recorded by the listener), "
                    "fit its runtime model, print advice for an input 4x larger, and write the HTML "
                    "report. Runs already recorded are reused, so a second demo is quick.")
    p.add_argument("--store", default=None, help="history store (default: $SPARKPREDICT_STORE, else ~/.sparkpredict/store; not a cluster store of spark-defaults.conf)")
    p.add_argument("--workdir", default=None,
                   help="report, models, generated data and Spark scratch (default ~/.sparkpredict/demo)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    import time

    from ..demo import (
        ADVICE_FACTOR,
        DEADLINE_MARGIN,
        DEMO_EXECUTORS,
        DEMO_SIZES,
        DEMO_WORKLOAD,
        run_demo,
    )
    from ..units import format_bytes, format_duration, plural
    from .sweep import ProgressBar

    t0 = time.monotonic()
    print(f"sparkpredict demo: sweeping {DEMO_WORKLOAD} over sizes {DEMO_SIZES} x executors "
          f"{DEMO_EXECUTORS} on local Spark, each run recorded by the listener", file=sys.stderr)
    res = run_demo(store=args.store, workdir=args.workdir, progress=ProgressBar())
    sw = res.sweep
    assert sw is not None  # run_demo records the sweep or raises
    print(f"\n1. sweep: {plural(len(sw.ran), 'run')} recorded now, {len(sw.skipped)} reused, "
          f"{len(sw.failed)} failed, in {format_duration(sw.seconds)}")
    if res.model_name:
        cv = f", cross-validated MAPE {res.cv_mape * 100:.1f}%" if res.cv_mape is not None else ""
        print(f"2. model: {res.model_name}{cv}")
    else:
        print("2. model: none (see below)")
    if res.advice is not None:
        assert res.advice_input_bytes is not None  # set before the advice is asked for
        print(f"3. advice for {format_bytes(res.advice_input_bytes)} ({ADVICE_FACTOR}x the sweep's largest size):")
        print(f"   {res.advice.summary()}")
        for w in res.advice.warnings:
            print(f"   warning: {w}")
        d = res.deadline_advice
        if d is not None:
            # where the deadline comes from: without it, a reader wonders why 29 s
            print(f"   with a deadline of {format_duration(d.deadline_s)} ({DEADLINE_MARGIN - 1:.0%} above the lowest upper bound "
                  f"of the counts swept, so one meets it): {d.summary()}")
            # its own warnings too: a "meets" on a flat prediction read as a confident answer
            for w in d.warnings:
                if w not in res.advice.warnings:
                    print(f"   warning: {w}")
    else:
        print("3. advice: none (see below)")
    print(f"4. report: {res.report_path or 'not written (see below)'}")
    print("5. where everything is:")
    print(f"   history store  {res.store}   (runs/ stages/ tasks/ executors/ host_samples/ stage_scans/ run_inputs/ Parquet)")
    if res.models_dir:
        print(f"   fitted models  {res.models_dir}")
    print(f"   generated data {res.workdir / 'data'}")
    if res.report_path:
        print(f"   report         {res.report_path}")
    print(f"   next: sparkpredict suggest --job {DEMO_WORKLOAD} --input-size 1GB --deadline 1m "
          f"--store {shlex.quote(str(res.store))}")
    for m in res.messages:
        print(f"note: {m}", file=sys.stderr)
    print(f"demo finished in {format_duration(time.monotonic() - t0)}", file=sys.stderr)
    return 0 if res.report_path and not sw.failed else 1
