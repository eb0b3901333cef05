"""``sparkpredict evaluate RUNS [--json]``: the study's protocols for every job and model."""
from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "evaluate", help="score every model on every job: 3-fold CV, extrapolation, practitioner's case",
        description="For each job of RUNS and each model (the six equations: Amdahl, Gustafson, "
                    "Ernest, 2D-plate, fully-connected with its size exponent fitted and fixed at "
                    "1; kernel ridge, gradient boosting, random forest, the combined model) run 3-fold CV, extrapolation by "
                    "size and by executors (train on the middle ~66% of levels, test the outer "
                    "~34%) and the practitioner's case (train the smallest ~60% of sizes); "
                    "report R², RRSE and MAPE. Every fold refits the model, the combined model's "
                    "choice of candidate included, and scores it on runs it did not see. `fit` "
                    "prints another figure, CV MAPE: the chosen model's error on the folds it was "
                    "chosen with (optimistic for that), 3-fold and extrapolation folds averaged "
                    "(higher where extrapolating is harder). A job needs at least 12 succeeded "
                    "runs, at two or more executor counts.")
    p.add_argument("runs", metavar="RUNS", nargs="?",
                   help="runs table (CSV/Parquet); default: the runs of the store")
    p.add_argument("--store", help="history store (default: spark.sparkpredict.store of spark-defaults.conf, else $SPARKPREDICT_STORE, else ~/.sparkpredict/store); runs come from it "
                                   "when RUNS is not given; --stage-models with RUNS needs it given")
    p.add_argument("--stage-models", action="store_true",
                   help="also score the stage-level forests and the task replay (they read the "
                        "store's stage and task rows: with RUNS, give --store)")
    p.add_argument("--json", action="store_true",
                   help="print all rows as JSON, with per split the mean and worst MAPE, mean R² and "
                        "coverage: `summary` of the combined model (empty when it is not among "
                        "--models), `summary_by_model` of every model")
    p.add_argument("--models", help="comma-separated model kinds (default: all the study's + combined; "
                                    "combined, or auto, is the combined model; stage-forest and "
                                    "replay are the stage-level models, read from the store)")
    p.add_argument("--split", action="append", help="only this split (repeatable)")
    p.add_argument("--random-state", type=int, default=0,
                   help="seed of the cv3 split's random folds, 0..2**32-1 (default 0); the models' own "
                        "seeds are fixed: the same seed gives the same figures")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json

    from ..config import resolve_store
    from ..errors import InputError
    from ..evaluate import (
        ONE_COUNT,
        SPLITS,
        STAGE_MODELS,
        check_kinds,
        evaluate,
        format_tables,
        kind_factories,
        summary,
    )
    from ..features.runs import no_runs_error, read_runs_file, runs_table
    from ..store import io as store_io

    # A runs file may come from any store: the stage models must be told which one. Without
    # RUNS, the store is resolved as `runs`, `report` and `suggest` resolve it.
    kinds = [k.strip() for k in args.models.split(",") if k.strip()] if args.models else None
    # the stage-level models by the names their columns have: --models stage-forest scores it
    # alone (it was refused as an unknown kind, so each was only ever scored with the other)
    staged = [k for k in kinds or [] if k in STAGE_MODELS]
    stage_level = args.stage_models or bool(staged)
    if stage_level and args.runs is not None and args.store is None:
        what = "--stage-models" if args.stage_models else f"--models {staged[0]}"
        raise InputError(f"{what} needs the store's stage and task rows",
                         "add --store S (the store the runs were recorded in)")
    if args.runs is not None and args.store is not None and not stage_level:
        raise InputError("RUNS and --store both say where the runs are",
                         "drop one of them (--store beside RUNS is for the stage-level models only: "
                         "--stage-models, --models stage-forest,replay)")
    if args.models is not None and not args.models.strip(", "):
        raise InputError("--models is empty", "name model kinds, e.g. --models combined,amdahl, or leave "
                                              "--models out for all of them")
    if args.runs is not None:
        runs = read_runs_file(args.runs)
    else:
        store = resolve_store(args.store)  # given, else the default (config.default_store)
        raw = store_io.open(store).runs()
        runs = runs_table(raw)
        if runs.empty:
            raise no_runs_error(store, raw)
    splits = tuple(args.split) if args.split else SPLITS
    bad = [s for s in splits if s not in SPLITS]
    if bad:
        raise InputError(f"unknown split(s) {bad}", f"use {', '.join(SPLITS)}")
    if kinds:
        check_kinds([k for k in kinds if k not in STAGE_MODELS], also=STAGE_MODELS)
    models: Any = kinds
    if args.stage_models or staged:
        from ..models.replay import ReplayRuntimeModel
        from ..models.stages import StageRuntimeModel

        path = resolve_store(args.store)
        if args.runs is not None:
            _check_runs_in_store(runs, path, args.runs)
        # named as without --stage-models: auto is "combined"
        models = kind_factories([k for k in kinds or [] if k not in STAGE_MODELS])
        factories = {"stage-forest": lambda: StageRuntimeModel(store=path),
                     "replay": lambda: ReplayRuntimeModel(store=path)}
        # --stage-models adds both; without it, the ones --models names
        models.update({k: f for k, f in factories.items() if args.stage_models or k in staged})
    from .fit import SEED_MAX

    if not 0 <= args.random_state <= SEED_MAX:
        raise InputError(f"--random-state {args.random_state} is outside 0..{SEED_MAX}",
                         "give a seed in that range, e.g. --random-state 0")
    ev = evaluate(runs, models=models, include_study=kinds is None, splits=splits, random_state=args.random_state)
    skipped = {**ev.skipped, **ev.unscored()}
    if not ev.rows["error"].isna().any():  # no model scored anywhere: nothing to show
        why = "; ".join(f"{k}: {v}" for k, v in list(skipped.items())[:10]) or "no runs"
        if ev.skipped and all(ONE_COUNT in v for v in ev.skipped.values()) and not ev.unscored():
            fix = ("record runs of the job at two or more executor counts "
                   "(sparkpredict submit --executors N, or sparkpredict sweep)")
        else:
            fix = ("record more runs: each job needs at least 12 succeeded runs over 3 or more "
                   "input sizes and executor counts (or choose other --split/--models)")
        raise InputError(f"nothing to evaluate: {why}", fix)
    if args.json:
        # summary: the combined model's, the one `fit` and `suggest` use; the same for every model
        # evaluated beside it, so that --models without auto still gets one
        by_model = {m: summary(ev, m) for m in dict.fromkeys(ev.rows["model"])}
        doc = {**ev.to_json(), "summary": summary(ev), "summary_by_model": by_model}
        print(json.dumps(_finite(doc), indent=1, default=float))
        return 0
    print(format_tables(ev))
    if skipped:
        print("\nskipped: " + "; ".join(f"{k}: {v}" for k, v in list(skipped.items())[:20]))
    return 0


def _check_runs_in_store(runs: Any, store: str, runs_path: str) -> None:
    """The stage-level models read RUNS' stages and tasks from ``store`` by run id: a runs file
    of another store scored nothing, and said to record more runs."""
    from ..errors import InputError
    from ..store import io as store_io

    if "run_id" not in runs:
        raise InputError(f"{runs_path} has no run_id column, which the stage-level models need",
                         f"export the runs with `sparkpredict runs --store {store} --out FILE`")
    held = set(store_io.open(store).read("runs", columns=["run_id"])["run_id"].astype(str))
    if not held.intersection(runs["run_id"].astype(str)):
        raise InputError(f"none of the runs in {runs_path} is in the store {store}",
                         "give --store the store the runs were recorded in (`sparkpredict runs "
                         "--store S --out FILE` exports a store's runs)")


def _finite(x: Any) -> Any:
    """``x`` with NaN and infinities as None: JSON has no such numbers (json.dumps would write
    NaN, which strict parsers refuse); a model without intervals has no coverage."""
    import math

    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_finite(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x
