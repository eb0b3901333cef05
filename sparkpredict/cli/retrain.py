"""``sparkpredict retrain``: refit jobs with new runs into the store's model registry."""
from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..retrain import RetrainResult


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "retrain", help="refit the models of jobs with new runs into the store's registry",
        description="Refit the whole-job runtime model of every job whose runs changed since the last "
                    "retrain, and commit them to the store's model registry (STORE/_models). Without "
                    "--spark/--local the faster path is chosen by the number of jobs to refit "
                    "(see docs/retrain.md). Spark logs its errors only, unless -v (or a log4j "
                    "configuration of your own).")
    p.add_argument("--store", help="history store path or URI (default: $SPARKPREDICT_STORE or "
                                   "~/.sparkpredict/store)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--spark", action="store_true", help="fit inside Spark (repartition(job).mapInPandas)")
    where.add_argument("--local", action="store_true", help="fit in this process, no JVM")
    p.add_argument("--master", help="Spark master for --spark (default local[*]); implies --spark")
    p.add_argument("--force", action="store_true", help="refit every job, changed or not")
    p.add_argument("--kind", default="auto",
                   help="model kind of every fit: auto (default), hybrid, an equation or an ML kind")
    p.add_argument("--no-stage-models", dest="stage_models", action="store_false",
                   help="fit only the whole-job models, not each job's stage-level forests")
    p.add_argument("--dry-run", action="store_true", help="only say which jobs would be refit, and how")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from .. import retrain as RT
    from ..errors import InputError
    from . import printed_here

    if args.local and args.master:
        raise InputError("--local and --master contradict each other", "drop one of them")
    # before reading the store: a --dry-run refuses what the retrain would refuse
    if args.master:
        RT.check_master(args.master)
    RT.check_kind(args.kind)
    use_spark = True if (args.spark or args.master) else (False if args.local else None)
    if args.dry_run:
        out = RT.plan_path(args.store, force=args.force, kind=args.kind, stage_models=args.stage_models)
        if use_spark is not None:
            out["path"] = "spark" if use_spark else "local"
        out["crossover_jobs"] = RT.crossover_jobs(args.kind)
        stale, path = out["to_refit"], out["path"]
        if args.json:
            print(json.dumps(out, indent=2))
        else:
            print(f"{len(stale)} of {out['jobs']} job(s) would be refit on the {path} path, "
                  f"{len(out['stage_jobs'])} of them with stage models (Spark from "
                  f"{RT.crossover_jobs(args.kind)} jobs, or {RT.crossover_stage_jobs(args.kind)} "
                  "with stage models)" + ("; nothing to refit: Spark would not start" if path == "spark"
                                          and not stale else ""))
            for job in stale:
                print(f"  {job}")
            if out["still_failing"]:
                print(f"{_still_failing(out['still_failing'])}: tried again when they change, or with --force")
        return 0
    with printed_here("sparkpredict.retrain", args.verbose):  # each failure: "not refit" below
        res = RT.retrain(args.store, use_spark=use_spark, master=args.master, force=args.force,
                         kind=args.kind, stage_models=args.stage_models, spark_logs=args.verbose)
    if args.json:
        print(json.dumps({
            "retrain_id": res.retrain_id, "path": res.fit_path, "master": res.master, "jobs": res.n_jobs,
            "refit": res.refit, "stage_refit": res.stage_refit, "stage_skipped": res.stage_skipped,
            "unchanged": len(res.unchanged), "failed": res.failed, "still_failing": res.still_failing,
            "spark_started": res.spark_started,
            "snapshot": res.snapshot, "seconds": round(res.seconds, 3)}, indent=2))
    else:
        print(summary(res))
        if res.stage_refit or res.stage_skipped:
            print(f"stage models: {len(res.stage_refit)} refit, {len(res.stage_skipped)} job(s) without stage rows")
        again = set(res.still_failing)
        for job, why in sorted(res.failed.items()):
            print(f"  not refit: {job}: {why}" + (" (not tried again until its runs change, or with --force)"
                                                  if job in again else ""))
        if res.snapshot:
            print(f"registry: {res.snapshot}")
    return res.exit_code


def summary(res: RetrainResult) -> str:
    """The first line of a retrain's report: what was refit, where, and what was not."""
    if res.fit_path == "spark" and not res.spark_started:
        head = (f"refit 0 of {res.n_jobs} job(s) in {res.seconds:.1f} s: nothing to refit, answered from "
                f"the store without starting Spark" + (f" ({res.master})" if res.master else ""))
    else:
        where = res.fit_path + (f" ({res.master})" if res.master else "")
        head = f"refit {len(res.refit)} of {res.n_jobs} job(s) on the {where} path in {res.seconds:.1f} s"
    tail = f"; {len(res.unchanged)} unchanged, {len(res.failed) - len(res.still_failing)} failed"
    if res.still_failing:
        tail += f", {_still_failing(res.still_failing)}"
    return head + tail


def _still_failing(labels: list[str], most: int = 5) -> str:
    """"2 still failing (their runs have not changed: a, b)", naming the first ``most``."""
    names = ", ".join(labels[:most]) + (f", ... ({len(labels) - most} more)" if len(labels) > most else "")
    return f"{len(labels)} still failing ({'its' if len(labels) == 1 else 'their'} runs have not changed: {names})"
