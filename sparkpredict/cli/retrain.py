"""``sparkpredict retrain``: refit jobs with new runs into the store's model registry."""
from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from .store_cmd import add_no_compact, compact_lines, compaction_doc

if TYPE_CHECKING:
    from ..retrain import RetrainResult


#: The exit status of ``sparkpredict retrain`` and ``jobs/retrain.py`` (both ``--help`` say it):
#: :attr:`sparkpredict.retrain.RetrainResult.exit_code`, and 2 for a user's mistake.
EXIT_STATUS = ("Exit status: 0 when the retrain went through, also when models were skipped because "
               "their job's runs cannot support them yet (too few usable runs: record more); 1 when a "
               "model's fit failed with an error (now, or before on the same runs; the models that "
               "fitted are committed all the same); 2 for a mistake in the arguments or the store "
               "(nothing written).")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "retrain", help="refit the models of jobs with new runs into the store's registry",
        description="Refit the whole-job runtime model of every job whose runs changed since the last "
                    "retrain, and commit them to the store's model registry (STORE/_models). Without "
                    "--spark/--local the faster path is chosen by the number of jobs to refit "
                    "(see docs/retrain.md). Spark logs its errors only, unless -v (or a log4j "
                    "configuration of your own).",
        epilog=EXIT_STATUS)
    p.add_argument("--store", help="history store path or URI (default: spark.sparkpredict.store of "
                                   "spark-defaults.conf, else $SPARKPREDICT_STORE, else ~/.sparkpredict/store)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--spark", action="store_true", help="fit inside Spark (repartition(job).mapInPandas)")
    where.add_argument("--local", action="store_true", help="fit in this process, no JVM")
    p.add_argument("--master", help="Spark master for --spark (default local[*]); implies --spark")
    p.add_argument("--job", action="append", metavar="JOB",
                   help="judge and refit only this job (repeat for more); the other jobs' models stay")
    p.add_argument("--force", action="store_true",
                   help="refit every job (each --job), changed or not")
    p.add_argument("--kind", default="auto",
                   help="model kind of every fit: auto (default), hybrid, an equation or an ML kind")
    p.add_argument("--no-stage-models", dest="stage_models", action="store_false",
                   help="fit only the whole-job models, not each job's stage-level forests")
    merge = p.add_mutually_exclusive_group()
    merge.add_argument("--compact", action="store_true",
                       help="first merge the store's small batches (`sparkpredict store compact`, its "
                            "defaults), however few: a nightly retrain keeps the store quick to read")
    add_no_compact(merge, "first", dest="auto_compact")
    p.add_argument("--dry-run", action="store_true", help="only say which jobs would be refit, and how")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from .. import retrain as RT
    from ..errors import InputError
    from ..units import plural
    from . import printed_here

    if args.local and args.master:
        raise InputError("--local and --master contradict each other", "drop one of them")
    # before reading the store: a --dry-run refuses what the retrain would refuse
    if args.master:
        RT.check_master(args.master)
    RT.check_kind(args.kind)
    use_spark = True if (args.spark or args.master) else (False if args.local else None)
    compacted = None
    if args.compact:
        compacted = compact_first(args.store, args.job, dry_run=args.dry_run)
    elif args.auto_compact and not args.dry_run:
        compacted = compact_if_due(args.store, args.job)
    if compacted is not None and not args.json:
        for line in compact_lines(compacted):
            print(line)
    if args.dry_run:
        out = RT.plan_path(args.store, force=args.force, kind=args.kind, stage_models=args.stage_models,
                           jobs=args.job)
        if use_spark is not None:
            out["path"] = "spark" if use_spark else "local"
        out["crossover_jobs"] = RT.crossover_jobs(args.kind)
        stale, path = out["to_refit"], out["path"]
        if args.json:
            print(json.dumps(out | compaction_doc(compacted), indent=2))
        else:
            # the crossover only chose the path when neither --spark nor --local forced it
            crossover = "" if use_spark is not None else (
                f" (the Spark path is taken from {plural(RT.crossover_jobs(args.kind), 'job')} to refit, or "
                f"{RT.crossover_stage_jobs(args.kind)} with stage models: where its start-up pays back, docs/retrain.md)")
            print(f"{len(stale)} of {out['jobs']} job(s) would be refit on the {path} path, "
                  f"{len(out['stage_jobs'])} of them with stage models{crossover}"
                  + ("; nothing to refit: Spark would not start" if path == "spark" and not stale else ""))
            reasons = out["refit_reasons"]
            for job in stale:
                why = reasons.get(job, "its stage model is behind")
                print(f"  {job}: {why}")
            skipped = set(out["still_skipped"])
            parts = [_still_failing(out["still_skipped"], "still skipped")] if skipped else []
            failing = [k for k in out["still_failing"] if k not in skipped]
            parts += [_still_failing(failing)] if failing else []
            if parts:
                print(f"{', '.join(parts)}: tried again when they change, or with --force")
        return 0
    with printed_here("sparkpredict.retrain", args.verbose):  # each failure: "not refit" below
        res = RT.retrain(args.store, use_spark=use_spark, master=args.master, force=args.force,
                         kind=args.kind, stage_models=args.stage_models, spark_logs=args.verbose,
                         jobs=args.job)
    if args.json:
        print(json.dumps(res.to_dict() | compaction_doc(compacted), indent=2))
    else:
        for line in report_lines(res):
            print(line)
    return res.exit_code


def compact_first(store: str | None, jobs: list[str] | None, *, dry_run: bool = False) -> Any:
    """``--compact``: :func:`~sparkpredict.store.compact.compact` the store before the retrain,
    after refusing ``--job`` names without runs (as the retrain would), since the compaction
    rewrites the store first. Returns its :class:`~sparkpredict.store.compact.CompactResult`."""
    from ..store import io as store_io
    from ..store.compact import compact

    if jobs:
        _check_job_names(store_io.open(store), jobs)
    return compact(store, dry_run=dry_run)


def _check_job_names(st: Any, jobs: list[str] | None) -> None:
    """Refuse ``--job`` names without runs before a compaction rewrites the store: exit 2 must
    leave it as it was."""
    if jobs:
        from ..retrain_plan import check_jobs

        check_jobs(jobs, st.read("runs", columns=["job"])["job"], f"store {st.path!r}")


def compact_if_due(store: str | None, jobs: list[str] | None = None) -> Any:
    """A retrain's default: :func:`~sparkpredict.store.compact.auto_compact` the store first,
    as sparkpredict's writers do after their work, so that a store only listeners write stays
    quick to read under a nightly retrain too. None when not due, and when there is no store
    (the retrain then says what is wrong), or when the store cannot be opened here (an
    ``hdfs://`` store on a driver without libhdfs: the retrain, which opens it the same way,
    then says what is missing)."""
    from ..store import io as store_io
    from ..store.compact import auto_compact

    try:
        st = store_io.open(store)
    except Exception:  # noqa: BLE001  # the retrain opens it itself and says what is wrong
        return None
    _check_job_names(st, jobs)
    return auto_compact(st)


def report_lines(res: RetrainResult) -> list[str]:
    """A retrain's report for a person, as ``sparkpredict retrain`` prints it and
    ``jobs/retrain.py`` logs it: the :func:`summary`, the stage models, each model not refit
    (``failed:`` or ``skipped:``) with its fix, the committed snapshot."""
    from ..units import plural

    lines = [summary(res)] + ([f"note: {res.path_note}"] if res.path_note else [])
    if res.refit_reasons:
        from ..retrain_plan import reasons_line

        lines.append(reasons_line(res.refit_reasons))
    if res.stage_refit or res.stage_skipped:
        lines.append(f"stage models: {len(res.stage_refit)} refit, {plural(len(res.stage_skipped), 'job')} "
                     "without stage rows to learn from (none recorded, or only of runs that did not succeed)")
    again = set(res.still_failing)
    for what, models in (("failed", res.errors), ("skipped", res.skipped)):
        # models not refit for the same reason (ingested logs without an input size) share a line
        same: dict[tuple[str, bool], list[str]] = {}
        for label, why in sorted(models.items()):
            same.setdefault((why, label in again), []).append(label)
        for (why, tried_before), labels in sorted(same.items(), key=lambda kv: kv[1][0]):
            message, fix = _split_fix(why)
            lines.append(f"  {what}: {', '.join(labels)}{', each' if len(labels) > 1 else ''}: {message}"
                         + (f" (not tried again until {'its' if len(labels) == 1 else 'their'} runs change, "
                            "or with --force)" if tried_before else ""))
            if fix:
                lines.append(f"    fix: {fix}")
    if res.snapshot:
        lines.append(f"registry: {res.snapshot}")
    return lines


def summary(res: RetrainResult) -> str:
    """The first line of a retrain's report: what was refit, where, and what was not: models
    skipped for their runs (too few usable runs), models whose fit failed with an error, and
    those of them not tried again because their runs have not changed."""
    from ..units import plural

    if res.fit_path == "spark" and not res.spark_started:
        head = (f"refit 0 of {res.n_jobs} job(s) in {res.seconds:.1f} s: nothing to refit, answered from "
                f"the store without starting Spark" + (f" ({res.master})" if res.master else ""))
    else:
        where = res.fit_path + (f" ({res.master})" if res.master else "")
        jobs = len(set(res.refit) | set(res.stage_refit))  # a job refit: any of its models
        head = f"refit {jobs} of {res.n_jobs} job(s) on the {where} path in {res.seconds:.1f} s"
        if res.stage_refit:
            head += (f" ({plural(len(res.refit), 'whole-job model')}, "
                     f"{plural(len(res.stage_refit), 'stage model')})")
    again = set(res.still_failing)
    skipped = [k for k in res.skipped if k not in again]
    tail = f"; {len(res.unchanged)} unchanged"
    # models, not jobs: a job's whole-job model can be skipped while its stage model is refit
    if skipped:
        tail += f", {_models(skipped)} skipped (not enough usable runs)"
    failed = [k for k in res.errors if k not in again]
    tail += f", {_models(failed) if failed else 0} failed"
    still_skipped = [k for k in res.still_failing if k in res.skipped]
    if still_skipped:
        tail += f", {_still_failing(still_skipped, 'still skipped')}"
    still_failing = [k for k in res.still_failing if k not in res.skipped]
    if still_failing:
        tail += f", {_still_failing(still_failing)}"
    return head + tail


def _models(labels: list[str]) -> str:
    """"2 whole-job models", "1 stage model", "2 whole-job models and 1 stage model": ``labels``
    as ``RetrainResult.failed`` names models (the job for its whole-job model)."""
    from ..units import plural

    stage = sum(1 for k in labels if k.endswith(" model)"))
    parts = [plural(n, what) for n, what in ((len(labels) - stage, "whole-job model"), (stage, "stage model")) if n]
    return " and ".join(parts)


def _split_fix(why: str) -> tuple[str, str | None]:
    """A reason worded as sparkpredict's errors word themselves, ``"message (fix: fix)"``, as
    (message, fix); (why, None) without a fix."""
    at = why.find(" (fix: ")
    if at < 0 or not why.endswith(")"):
        return why, None
    return why[:at], why[at + len(" (fix: "):-1]


def _still_failing(labels: list[str], what: str = "still failing", most: int = 5) -> str:
    """"2 still failing (their runs have not changed: a, b)", naming the first ``most``."""
    names = ", ".join(labels[:most]) + (f", ... ({len(labels) - most} more)" if len(labels) > most else "")
    return f"{len(labels)} {what} ({'its' if len(labels) == 1 else 'their'} runs have not changed: {names})"
