"""``sparkpredict submit [options] -- <spark-submit args>``: run spark-submit, recording the run."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from . import _unit_word, confidence_arg
from .store_cmd import add_no_compact
from .suggest import add_param_option, parse_params


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        # no abbreviations: "--conf x=y" before -- was taken for --confidence, "--exec 2" for --executors
        "submit", help="run spark-submit with the listener attached", allow_abbrev=False,
        description="Run the real spark-submit with the sparkpredict listener; everything after -- "
                    "goes to spark-submit unchanged (your own --conf values win; one that contradicts "
                    "--store, --job, --input-size, --param or --executors is an error).")
    p.add_argument("--store", help="history store path or URI (default: spark.sparkpredict.store of your --conf "
                   "or properties files, then spark-defaults.conf, else $SPARKPREDICT_STORE, else ~/.sparkpredict/store)")
    p.add_argument("--job", help="job key grouping runs of this job (default: the application name)")
    p.add_argument("--executors", help="N, or 'auto' to take sparkpredict's advice (needs --job, --input-size)")
    p.add_argument("--input-size", help="declared input size of this run, e.g. 120g")
    p.add_argument("--deadline", help="with --executors auto: finish within this time, e.g. 30m")
    # no default: given without --executors auto, it is refused rather than ignored
    p.add_argument("--objective", choices=["cost", "time", "knee"],
                   help="with --executors auto: what the advice optimises (default cost)")
    p.add_argument("--budget", type=float, metavar="B",
                   help="with --executors auto --objective time: most the run may cost (money with "
                        "--price, else executor-hours), held at --confidence by the interval's upper bound")
    p.add_argument("--price", type=float, metavar="P",
                   help="with --executors auto: price of one executor-hour (the advice then costs in money)")
    p.add_argument("--confidence", type=confidence_arg, metavar="C",
                   help="with --executors auto: the confidence the deadline and budget are held at, "
                        "0.9 or 90%% (default 0.9)")
    add_param_option(p, text="declare a job parameter of this run beyond its size (e.g. "
                     "iterations=25; recorded as spark.sparkpredict.param.NAME), used by --executors "
                     "auto once earlier runs declared it too; repeat for several")
    p.add_argument("--dry-run", action="store_true",
                   help="print the spark-submit command line (with --executors auto: after the advice) "
                        "on stdout, and run nothing")
    add_no_compact(p, "after the run")
    p.add_argument("spark_args", nargs=argparse.REMAINDER, help="-- then spark-submit's arguments")
    p.set_defaults(func=_run)


def _job_example(store: str | None) -> str:
    """``--job NAME`` for the fix of a missing --job: the store's jobs when it has some (the
    advice is asked of one of them), else a made-up name."""
    try:
        from .. import store as store_mod
        from ..config import resolve_store

        jobs = sorted(set(store_mod.open(resolve_store(store)).runs()["job"].astype(str)))
    except Exception:  # no store yet, or one that cannot be read: the advice itself says so  # noqa: BLE001
        jobs = []
    if not jobs:
        return "--job NAME (the name its runs are recorded under, e.g. --job nightly-etl)"
    from ..config import shown_job

    shown = ", ".join(shown_job(j, 60) for j in jobs[:5]) + (f", ... ({len(jobs) - 5} more)" if len(jobs) > 5 else "")
    return f"--job NAME, the job whose runs the advice reads (in the store: {shown})"


def executor_settings(args: argparse.Namespace, spark_args: list[str], input_bytes: int | None,
                      params: dict[str, str] | None = None,
                      store: str | None = None,
                      before_shown: Callable[[], None] | None = None) -> tuple[int | None, dict[str, str]]:
    """(--num-executors, extra --conf) from --executors N|auto, advised from ``store`` (default
    ``args.store``); prints the advice's summary on stderr, once ``before_shown`` (a check that
    raises InputError) passed. ``before_shown`` runs once whatever --executors is, after the
    errors of its value and the advice's own: the caller's one check."""
    from ..errors import InputError, UnknownJobError

    params = params or {}
    checked = before_shown or (lambda: None)
    if args.executors is None:
        checked()
        return None, {}
    if args.executors != "auto":
        from ..advice_args import whole_number

        n = whole_number(args.executors)
        if n is None:
            try:
                float(args.executors)
                what = "a whole number in digits"  # 1.5, 1e1
            except ValueError:
                what = "a number"
            raise InputError(f"--executors {args.executors!r} is not {what}",
                             "give a whole number of executors, or auto")
        if n < 1:
            raise InputError(f"--executors {n} must be at least 1", "give 1 or more, or auto")
        from ..units import check_count_limit

        check_count_limit(n, "--executors")
        checked()
        return n, {}
    if not args.job or input_bytes is None:
        examples = {"--job": _job_example(store or args.store), "--input-size": "--input-size 120g"}
        missing = [flag for flag, given in (("--job", args.job), ("--input-size", input_bytes)) if not given]
        raise InputError(f"--executors auto needs {' and '.join(missing)}",
                         "add " + " ".join(examples[flag] for flag in missing))
    from ..advice_args import check_suggest_args, cli_flags
    from ..advice_source import HistorySource
    from ..advise import default_max_executors, suggest_executors
    from ..capture.submit_args import (
        dynamic_allocation_enabled,
        executor_shape,
        local_executor_limit,
        runs_local,
        runs_on_this_machine,
    )

    # the executors the run will have: advised for another shape than the user's arguments ask
    # for, the count (and the warnings on cores and memory no run had) were suggest's for another
    cores, memory_mb = executor_shape(spark_args)
    from ..units import MIN_EXECUTOR_MEMORY_MB

    if memory_mb is not None and memory_mb < MIN_EXECUTOR_MEMORY_MB and runs_local(spark_args):
        # a local master's executors are the driver's threads: its memory is --driver-memory's,
        # which the advice's check would have called --executor-memory
        raise InputError(f"--driver-memory {memory_mb} MiB is too small: on a local master the executors "
                         f"are the driver's threads, and Spark starts no driver under {MIN_EXECUTOR_MEMORY_MB} MiB",
                         f"give at least --driver-memory {MIN_EXECUTOR_MEMORY_MB}m")
    confidence = getattr(args, "confidence", None)
    asked = {"deadline_s": args.deadline, "objective": args.objective or "cost",
             "budget": getattr(args, "budget", None), "price_per_executor_hour": getattr(args, "price", None),
             # 0 is refused as suggest refuses it, not taken for "not given"
             "confidence": 0.9 if confidence is None else confidence,
             "executor_cores": cores, "executor_memory_mb": memory_mb}
    with cli_flags():  # all of it before the fit: a refused value must not wait for one, nor cache it
        deadline = check_suggest_args(args.job, input_bytes, **asked).deadline_s
    history = store if store is not None else args.store
    try:
        src = HistorySource.resolve(args.job, store=history)
    except UnknownJobError as exc:
        # a job's first submit: there is nothing to advise from yet, and the store's other jobs
        # are no answer unless the name was mistyped
        listed = getattr(exc, "listed", exc.fix)
        typo = f"; if {args.job!r} is mistyped, {listed}" if listed and listed.startswith("use one of") else ""
        if getattr(exc, "no_success", False):  # its runs are there: what is wrong with them
            raise InputError(f"{exc.message}: --executors auto has no finished run of it to advise from",
                             f"{exc.fix}; or submit with --executors N") from None
        first = ("submit its first run with --executors N: the next submit advises from it (from one "
                 "run roughly, by replaying its tasks; from runs at two or more counts by a fitted model)")
        if "did you mean" in (listed or ""):
            # a name within a typo of a known job is more likely that job than a new one
            raise InputError(f"{exc.message}: --executors auto has no runs of it to advise from",
                             f"{listed}; if {args.job!r} is a new job, {first}") from None
        raise InputError(f"{exc.message}: --executors auto has no runs of it to advise from",
                         f"{first}{typo}") from None
    known = set(src.param_names())
    if runs_on_this_machine(spark_args):
        # what this machine can run (a sweep's limit): 12 executors on 2 cores were advised,
        # started, and recorded as 12 executors
        asked["max_executors"] = min(default_max_executors(src), local_executor_limit(spark_args))
    new = sorted(set(params) - known)
    if new:  # the first runs that declare a parameter cannot be advised by it yet
        print(f"sparkpredict: job parameter(s) {', '.join(new)} are new to {args.job}'s history: "
              "recorded with this run, not used by this advice", file=sys.stderr, flush=True)
    with cli_flags():  # the advice's errors name this command's flags (--param), not arguments
        advice = suggest_executors(args.job, input_bytes, **{**asked, "deadline_s": deadline},
                                   params={k: v for k, v in params.items() if k in known}, store=history)
    checked()
    # stderr, as submit's other lines: the job's stdout may be data piped elsewhere
    for line in advice_lines(advice) + [f"warning: {w}" for w in run_kind_warnings(src, spark_args)]:
        print(f"sparkpredict: {line}", file=sys.stderr, flush=True)
    # a local master has no dynamic allocation (its one executor is the driver): the count goes
    # into its thread count, as without the setting
    if dynamic_allocation_enabled(spark_args) and not runs_local(spark_args):
        lo, hi = advice.dynamic_allocation
        return None, {"spark.dynamicAllocation.minExecutors": str(int(lo)),
                      "spark.dynamicAllocation.maxExecutors": str(int(hi)),
                      **dynamic_start_within(spark_args, int(lo), int(hi))}
    return int(advice.executors), {}


def dynamic_start_within(spark_args: list[str], lo: int, hi: int) -> dict[str, str]:
    """Settings that keep dynamic allocation's first count within the advised bounds.

    Spark starts dynamic allocation at the largest of minExecutors, initialExecutors and
    spark.executor.instances; above maxExecutors, YARN and Kubernetes refuse to start the
    application ("initial executor number 50 must between min executor number 6 and max executor
    number 7") and the standalone manager asks for them all. A count of the user's own arguments
    outranks submit's --conf, so it is refused, naming it; a properties file's (a cluster's
    spark-defaults.conf) is set to the bound for this run, and said so. One below minExecutors
    Spark ignores itself."""
    from ..capture.submit_args import dynamic_allocation_starts
    from ..errors import InputError

    out = {}
    for key, n, where, own in dynamic_allocation_starts(spark_args):
        if n <= hi:
            continue
        above = (f"{where} starts dynamic allocation at {n} executors, above the advised "
                 f"spark.dynamicAllocation.maxExecutors={hi}")
        if own:
            option = "--num-executors" if where.startswith("--num-executors") else f"--conf {key}"
            raise InputError(f"{above}: YARN and Kubernetes refuse to start such an application, and "
                             f"the standalone manager asks for all {n}",
                             f"drop {option} (dynamic allocation then starts at minExecutors={lo}) or give "
                             f"at most {hi}; or drop --executors auto to run with your own settings")
        out[key] = str(hi)
        print(f"sparkpredict: {above}, which YARN and Kubernetes refuse: this run sets {key}={hi}",
              file=sys.stderr, flush=True)
    return out


def check_advice_options(args: argparse.Namespace) -> None:
    """Refuse the advice's options (``--deadline``, ``--objective``, ``--budget``, ``--price``,
    ``--confidence``) without ``--executors auto``: only the advice reads them, so the run would
    go ahead as if they had not been given."""
    from ..errors import InputError

    if args.executors == "auto":
        return
    given = [f"--{name}" for name in ("deadline", "objective", "budget", "price", "confidence")
             if getattr(args, name, None) is not None]
    if given:
        count = f"--executors {args.executors}" if args.executors is not None else "no --executors"
        names = given[0] if len(given) == 1 else ", ".join(given[:-1]) + " and " + given[-1]
        raise InputError(f"{names} {'apply' if len(given) > 1 else 'applies'} to "
                         f"--executors auto only, and would change nothing with {count}",
                         f"drop {names}, or let sparkpredict choose the executor count: "
                         "--executors auto --job NAME --input-size SIZE")


def check_given_once(args: argparse.Namespace, spark_args: list[str], input_bytes: int | None,
                     params: dict[str, str]) -> None:
    """Refuse a setting that submit's options and spark-submit's own arguments both give.

    The user's ``--conf`` (and ``--num-executors``) outrank what submit adds, so submit's
    ``--job``, ``--input-size``, ``--param`` or ``--executors`` would be dropped without a word,
    and the run recorded under the other value; which one was meant is a guess, as for
    ``--store`` (:func:`sparkpredict.capture.submit_args.submit_store`). A setting given twice
    alike is no conflict, except the executor count: where the user's arguments set it, submit
    leaves a local master's width alone too, and would record a count the run did not have."""
    from ..capture.submit_args import (
        dynamic_allocation_enabled,
        given_settings,
        runs_local,
    )
    from ..config import KEY_INPUT_BYTES, KEY_JOB, PARAM_PREFIX
    from ..errors import InputError
    from ..units import parse_bytes

    given = {k: v for k, v in given_settings(spark_args).items() if v[0].strip()}  # empty: unset

    def refuse(ours: str, key: str, what: str, noun: str) -> NoReturn:
        theirs = given[key][1]
        option = "--num-executors" if theirs.startswith("--num-executors") else f"--conf {key}"
        raise InputError(f"{ours} and {theirs} {what}",
                         f"give {noun} once: drop {option}, or {ours.split()[0]}")

    def same_number(a: str, b: str) -> bool:
        try:
            return float(a) == float(b)
        except ValueError:
            return a.strip() == b.strip()

    if args.executors is not None:
        ours = f"--executors {args.executors}"
        keys = ["spark.executor.instances"]
        if args.executors == "auto" and dynamic_allocation_enabled(spark_args) and not runs_local(spark_args):
            # the advice then sets dynamic allocation's bounds; a count asked for is its start
            keys = ["spark.dynamicAllocation.minExecutors", "spark.dynamicAllocation.maxExecutors"]
        for key in keys:
            if key in given:
                refuse(ours, key, "both set the executor count", "the executor count")
    if args.job and KEY_JOB in given and given[KEY_JOB][0].strip() != args.job:
        refuse(f"--job {args.job}", KEY_JOB, "name different jobs", "the job")
    if input_bytes is not None and KEY_INPUT_BYTES in given:
        try:
            same = parse_bytes(given[KEY_INPUT_BYTES][0].strip()) == input_bytes
        except InputError:
            same = False
        if not same:
            refuse(f"--input-size {args.input_size}", KEY_INPUT_BYTES, "declare different input sizes",
                   "the input size")
    for name, value in params.items():
        key = PARAM_PREFIX + name
        if key in given and not same_number(given[key][0], value):
            refuse(f"--param {name}={value}", key, "give the parameter different values", "the parameter")


def run_kind_warnings(src: Any, spark_args: list[str]) -> list[str]:
    """What makes the run about to start unlike every run the advice learnt from, said before
    it starts: ``suggest`` warns of a mixed history only once this run is in it. A sort advised
    "~2.0s, meets 6s" from sweep runs took 24 s as a submit's cold JVM."""
    from ..capture.submit_args import effective_master
    from ..config import master_kind

    out = []
    swept, alone = src.sweep_mix
    if swept and not alone:
        out.append(f"every run of {src.job} in the history ran in `sparkpredict sweep`, all in one warm "
                   "driver JVM; this submit starts a cold one, whose start and first job (about 15 s more "
                   "on a 2-core machine) no run shows: on small inputs take the runtime above as a lower "
                   "bound, and record submitted runs under another --job than swept ones")
    kinds = src.masters
    master = effective_master(spark_args)[0]
    mine = master_kind(master)
    if kinds and mine is not None and mine not in kinds:
        out.append(f"this run's master {master} is a {mine} master; every run of {src.job} ran on "
                   f"{' or '.join(sorted(kinds))} masters"
                   + (" (local-cluster starts executor JVMs within the run's time, 15-35 s on a "
                      "2-core machine)" if mine == "local-cluster" else "")
                   + ": the advice predicts those, not this one")
    return out


def advice_lines(advice: Any) -> list[str]:
    """The advice as submit shows it before the run: its summary, then what ``suggest`` warns
    of (beyond the history, a wide interval, a model that misses its runs), each a line."""
    beyond = advice.extrapolation_notes()
    notes = ["extrapolates beyond the history: " + "; ".join(beyond)] if beyond else []
    return [f"advice: {advice.summary()}", *notes, *(f"warning: {w}" for w in advice.warnings)]


def _run(args: argparse.Namespace) -> int:
    import os

    from ..advice_args import check_params, cli_flags
    from ..capture.listener import check_store
    from ..capture.submit import check_jvm_names, submit
    from ..capture.submit_args import (
        KEY_DYNAMIC_MAX,
        check_application,
        check_deploy_mode,
        check_master,
        check_memory,
        driver_is_local,
        submit_store,
    )
    from ..config import KEY_INPUT_BYTES, PARAM_PREFIX
    from ..errors import InputError
    from ..units import (
        parse_user_bytes,
        plural,
        unitless_duration_warning,
        unitless_size_warning,
    )

    spark_args = list(args.spark_args)
    if spark_args and spark_args[0] != "--" and _unit_word(spark_args[0]) and not os.path.exists(spark_args[0]):
        # `--input-size 2 GB -- job.py`: the shell split the value, and its unit was taken for
        # the application ("the application 'GB' is not a file here")
        raise InputError(f"{spark_args[0]!r} follows submit's options, before -- and spark-submit's arguments: "
                         "a size or duration typed with a space",
                         "write it as one word without the space (2GB, 1h30m), or quote it ('2 GB', '1h 30m')")
    if spark_args and spark_args[0] == "--":
        spark_args = spark_args[1:]
    if not spark_args:
        raise InputError("nothing to submit", "write: sparkpredict submit [options] -- job.py [args]")
    check_advice_options(args)
    check_master(spark_args)   # before the advice: a bad master should not wait for a fit
    check_deploy_mode(spark_args)
    check_memory(spark_args)  # also before the advice, which would be fitted for that size
    # the advice reads the store the listener will write (a cluster's spark-defaults.conf may
    # name it); a --store that contradicts --conf spark.sparkpredict.store fails here, before a fit
    history = submit_store(spark_args, args.store)
    input_bytes = parse_user_bytes(args.input_size) if args.input_size is not None else None
    # the size is recorded as the run's: said before the run, while it can still be stopped
    for bare in (unitless_size_warning(args.input_size, "--input-size"),
                 unitless_duration_warning(args.deadline, "--deadline")):
        if bare:
            print(f"warning: {bare}", file=sys.stderr)
    params = parse_params(args.param)
    with cli_flags():
        check_params(params)  # numbers only: the store's runs table reads them as such
    check_given_once(args, spark_args, input_bytes, params)
    if driver_is_local(spark_args):
        # before the advice and Spark: a store the listener cannot write would be found out only
        # as the driver's logged errors, after a run that recorded nothing
        check_store(history)
    check_jvm_names(spark_args, history)
    # A script that is not there is said alone, not below the advice's lines and the master the
    # run would get (a typo after `--executors auto` printed seven lines above its error); after
    # the checks of the options and the advice's own errors, which name what else is wrong.
    # Not for --dry-run: the script may be made between it and the real run.
    check = None if args.dry_run else (lambda: check_application(spark_args))
    executors, extra = executor_settings(args, spark_args, input_bytes, params, history, before_shown=check)
    extra.update({PARAM_PREFIX + name: value for name, value in params.items()})
    if input_bytes is not None:
        extra[KEY_INPUT_BYTES] = str(input_bytes)
    if executors is not None:
        from ..capture.submit_args import local_master_for

        local = local_master_for(spark_args, executors)
        if local is not None:
            print(f"sparkpredict: master {local.master} ({local.source}) runs as {local.new}: "
                  f"on a local master, {plural(executors, 'executor')} "
                  f"{'runs' if executors == 1 else 'run'} as its task threads (or local-cluster "
                  "executors), as a sweep records them", file=sys.stderr, flush=True)
    elif KEY_DYNAMIC_MAX in extra:
        from ..capture.submit_args import dynamic_allocation_master

        bound = int(extra[KEY_DYNAMIC_MAX])
        local = dynamic_allocation_master(spark_args, bound)
        if local is not None:
            print(f"sparkpredict: master {local.master} ({local.source}) runs as {local.new}: a "
                  f"local-cluster's workers cap dynamic allocation's executors, and maxExecutors={bound} "
                  f"needs {bound} of them", file=sys.stderr, flush=True)
    if args.dry_run:  # what a nightly run would be given, for a look before it is scheduled
        import shlex

        from ..capture.submit import build_command

        print(shlex.join(build_command(spark_args, store=args.store, job=args.job, executors=executors,
                                       extra_conf=extra)))
        return 0
    result = submit(spark_args, store=args.store, job=args.job, executors=executors, extra_conf=extra,
                    compact=args.compact)
    if result.run_ids:
        print(f"sparkpredict: recorded {', '.join(result.run_ids)} in {result.store}", file=sys.stderr)
        for run_id, (status, message) in result.outcomes.items():
            # the exit code alone did not say whether the run counts: a JVM application's
            # System.exit(3) after its jobs was heard by the listener as succeeded
            if status != "succeeded":
                why = (message or "").strip().splitlines()[0][:200] if (message or "").strip() else ""
                print(f"sparkpredict: {run_id} is recorded {status}" + (f" ({why})" if why else "")
                      + ": the advice learns from succeeded runs only", file=sys.stderr)
        if result.compaction is not None:
            from .store_cmd import compact_lines

            print(f"sparkpredict: {compact_lines(result.compaction)[0]}", file=sys.stderr)
        from ..advice_cache import prepare_advice

        # now, while the user reads the job's output, rather than at the next suggest
        prepare_advice(result.store, result.run_ids)
    elif result.killed_by is not None:
        # not from the status alone: an application's own exit status 255 (sys.exit(-1)) was
        # said to be "killed by signal 127"
        print(f"sparkpredict: no run was recorded in {result.store}: spark-submit was killed by signal "
              f"{result.killed_by} (exit status {result.returncode}), before the listener stored "
              "a run", file=sys.stderr)
    elif result.returncode != 0:
        # most often an application that failed before its session (a usage error, an import):
        # its own message above says why, which the listener's causes alone would hide
        print(f"sparkpredict: no run was recorded in {result.store}: the application exited with status "
              f"{result.returncode}, its error above, most likely before it started a SparkSession (or "
              "its own code replaced spark.extraListeners)", file=sys.stderr)
    else:
        # the likely causes, none of which the listener can report from an application it is not in
        print(f"sparkpredict: no run was recorded in {result.store}: the application started no "
              "SparkSession, or its own code replaced spark.extraListeners (the listener is then not "
              "in it), or the listener logged why above", file=sys.stderr)
    return result.returncode
