"""``sparkpredict fit RUNS --out MODEL_DIR``: fit one runtime model per job and save it (JSON).

Exit status: 0 when at least one job's model is saved; a job that cannot be fitted is then one
line of the table, its reason and its fix (the others' models are of use). 2 when no job can be
fitted, or for a mistake in the arguments: one ``error:`` and one ``fix:`` line, nothing saved.
"""
from __future__ import annotations

import argparse
import math
from typing import Any

#: numpy's seeds are unsigned 32-bit integers
SEED_MAX = 2**32 - 1


def cv_mape_note(kind: str) -> str:
    """What the table's ``CV MAPE`` is (``cv_mape_``), in one line: users compare it with
    ``sparkpredict evaluate``'s 3-fold figures, which measure something else."""
    what = "CV MAPE: mean of 3-fold CV and held-out largest/smallest sizes and executor counts"
    if kind in ("auto", "hybrid"):  # these choose among candidates on the very same folds
        return (f"{what}, on the folds the model was chosen with: optimistic. "
                "`sparkpredict evaluate` refits the choice per fold.")
    return f"{what}. `sparkpredict evaluate` scores each split alone."


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "fit", help="fit a runtime model per job from a runs table",
        description="Fit every job's runtime model (the combined model by default) and save them "
                    "as JSON in MODEL_DIR. A MODEL_DIR that already holds models keeps the other "
                    "jobs' models. No JVM is started.")
    p.add_argument("runs", metavar="RUNS", help="runs table (CSV/Parquet) from `sparkpredict runs`")
    p.add_argument("--out", required=True, metavar="MODEL_DIR")
    p.add_argument("--kind", default="auto", help="model kind (default auto; see docs/models.md)")
    p.add_argument("--random-state", type=int, default=0,
                   help=f"seed of the fits' random folds and forests, 0..{SEED_MAX} (default 0)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..errors import InputError
    from ..features.runs import read_runs_file
    from ..models.estimator import without_interval
    from ..models.persist import check_model_dir, fit_all, save_models
    from . import printed_here

    if not 0 <= args.random_state <= SEED_MAX:
        raise InputError(f"--random-state {args.random_state} is outside 0..{SEED_MAX}",
                         "give a seed in that range, e.g. --random-state 0")
    check_model_dir(args.out)  # before the fits, which take a while
    runs = read_runs_file(args.runs)
    skipped: dict[str, str] = {}
    fixes: dict[str, str] = {}
    with printed_here("sparkpredict.models.persist", args.verbose):  # each unfitted job: its table line
        models = fit_all(runs, random_state=args.random_state, kind=args.kind, skipped=skipped, fixes=fixes)
    kept: list[str] = []
    save_models(models, args.out, skipped=skipped, kept=kept)
    width = max(len(j) for j in models)
    name_width = max([26] + [len(m.name_) for m in models.values()])  # a combined name runs past 26
    uncrossed = []
    for job, m in models.items():
        mape = f"{100 * m.cv_mape_:5.1f}%" if math.isfinite(m.cv_mape_) else "  n/a"
        if not math.isfinite(m.cv_mape_) and without_interval(m):
            uncrossed.append(job)
        print(f"{job:<{width}}  {m.name_:<{name_width}} runs {m.n_runs_:>5}  CV MAPE {mape}")
    for job, why in skipped.items():
        fix = f"; fix: {fixes[job]}" if job in fixes else ""
        print(f"{job:<{width}}  not fitted: {why}" + ("; its earlier model is kept" if job in kept else "") + fix)
    print(cv_mape_note(args.kind))
    from ..features.runs import BASE_FEATURES

    extra = {j: [c for c in (getattr(m, "feature_names_", None) or []) if c not in BASE_FEATURES]
             for j, m in models.items()}
    for job, cols in extra.items():
        if cols:
            # every numeric column of the runs file beyond these is taken as known before a run:
            # one derived from the runtime would make the model look better than it is
            print(f"{job}: features beyond the size, executors, cores and memory: {', '.join(cols)} "
                  "(every other numeric column of the runs table; drop one known only after a run)")
    if uncrossed:
        from ..models.selection import CV_MIN_RUNS

        print(f"{', '.join(uncrossed)}: too few runs to cross-validate ({CV_MIN_RUNS} or more at two or more "
              f"executor counts needed), so no CV MAPE and no prediction interval: "
              f"{'its model predicts' if len(uncrossed) == 1 else 'their models predict'} "
              "a runtime but cannot say how far off it may be")
    # refitting some jobs into a folder keeps the others; say which, so none is a surprise
    what = "other job's model" if len(kept) == 1 else "other jobs' models"
    others = f" (kept {len(kept)} {what}: {', '.join(kept)})" if kept else ""
    print(f"saved {len(models)} model(s) to {args.out}{others}")
    return 0
