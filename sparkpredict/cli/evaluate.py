"""``sparkpredict evaluate RUNS [--json]``: the study's protocols for every job and model."""
from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "evaluate", help="score every model on every job: 3-fold CV, extrapolation, practitioner's case",
        description="For each job of RUNS and each model (the five equations, kernel ridge, gradient "
                    "boosting, random forest, the combined model) run 3-fold CV, extrapolation by "
                    "size and by executors (train on the middle ~66 % of levels, test the outer "
                    "~34 %) and the practitioner's case (train the smallest ~60 % of sizes); "
                    "report R², RRSE and MAPE.")
    p.add_argument("runs", metavar="RUNS", nargs="?",
                   help="runs table (CSV/Parquet); default: the runs of --store")
    p.add_argument("--store", help="history store (runs come from it when RUNS is not given; "
                                   "needed by --stage-models)")
    p.add_argument("--stage-models", action="store_true",
                   help="also score the stage-level forests and the task replay (need --store)")
    p.add_argument("--json", action="store_true", help="print all rows as JSON")
    p.add_argument("--models", help="comma-separated model kinds (default: all the study's + combined)")
    p.add_argument("--split", action="append", help="only this split (repeatable)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json

    from ..errors import InputError
    from ..evaluate import SPLITS, check_kinds, evaluate, format_tables, summary
    from ..features.runs import read_runs_file

    if args.runs is None and args.store is None:
        raise InputError("no runs to evaluate", "give a runs table (RUNS) or --store S")
    if args.stage_models and args.store is None:
        raise InputError("--stage-models needs the store's stage and task rows",
                         "add --store S (the store the runs were recorded in)")
    if args.runs is not None:
        runs = read_runs_file(args.runs)
    else:
        from ..features.runs import runs_table

        runs = runs_table(args.store)
    splits = tuple(args.split) if args.split else SPLITS
    bad = [s for s in splits if s not in SPLITS]
    if bad:
        raise InputError(f"unknown split(s) {bad}", f"use {', '.join(SPLITS)}")
    kinds = [k.strip() for k in args.models.split(",")] if args.models else None
    if kinds:
        check_kinds(kinds)
    models: Any = kinds
    if args.stage_models:
        from ..config import resolve_store
        from ..models.hybrid import JobRuntimeModel
        from ..models.replay import ReplayRuntimeModel
        from ..models.stages import StageRuntimeModel

        path = resolve_store(args.store)
        models = {k: (lambda k=k: JobRuntimeModel(kind=k)) for k in kinds or []}
        models["stage-forest"] = lambda: StageRuntimeModel(store=path)
        models["replay"] = lambda: ReplayRuntimeModel(store=path)
    ev = evaluate(runs, models=models, include_study=kinds is None, splits=splits)
    if args.json:
        print(json.dumps({**ev.to_json(), "summary": summary(ev)}, indent=1, default=float))
        return 0
    if ev.rows.empty:
        print("nothing to evaluate: " + "; ".join(f"{k}: {v}" for k, v in ev.skipped.items()))
        return 0
    print(format_tables(ev))
    if ev.skipped:
        print("\nskipped: " + "; ".join(f"{k}: {v}" for k, v in list(ev.skipped.items())[:20]))
    return 0
