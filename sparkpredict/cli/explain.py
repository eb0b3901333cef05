"""``sparkpredict explain RUN_ID``: was this run slowed by interference, by how much, and why?"""
from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "explain", help="estimate a run's slowdown from interference and name the cause",
        description="Compare a run with the clean runs of its job: expected and actual time, "
                    "the measured and estimated degradation, the resource group (cpu, memory, "
                    "network, disk) that caused it with its Shapley share, and the stages most "
                    "affected.")
    p.add_argument("run_id", metavar="RUN_ID", nargs="?",
                   help="run id as recorded (see `sparkpredict runs`); or --job")
    p.add_argument("--job", metavar="J",
                   help="instead of one run: the job's runs furthest above its runtime model's "
                        "prediction, each explained in one line")
    p.add_argument("--top", type=int, metavar="N", help="with --job: how many runs (default 5)")
    p.add_argument("--store", metavar="S", help="history store (default: spark.sparkpredict.store of spark-defaults.conf, else $SPARKPREDICT_STORE, else ~/.sparkpredict/store)")
    p.add_argument("--training-store", metavar="T",
                   help="store of labelled clean/interfered runs to train the estimator on "
                        "(default: the store itself when it holds labelled runs, else the "
                        "bundled dataset)")
    p.add_argument("--threshold", type=_level, default=0.10, metavar="F",
                   help="QoS threshold on the degradation, as a fraction between 0 and 1 or a "
                        "percentage (default 0.10, or 10%%: at most 10%% slower than expected)")
    p.add_argument("--stages", type=int, metavar="N", help="with a RUN_ID: stages to list (default 3)")
    p.add_argument("--json", action="store_true",
                   help="print the explanation as JSON. Fractions throughout (0.25 = 25 %%): "
                        "degradation (measured against the clean runs; null without them), "
                        "estimated_degradation (from the run's metrics), contributions (resource -> its "
                        "signed Shapley part: together they are the estimate less the model's "
                        "estimate for a clean run, docs/monitor.md), shares (the positive contributions as parts of "
                        "their sum, whatever its size: read them with main_cause, null when no cause is "
                        "named), qos (threshold -> whether the slowdown exceeded it: true is a violation), "
                        "violated (at --threshold), stages, warnings. With --job: {job, runs: [{run_id, "
                        "runtime_over_model, out_of_fold, error, explanation (the above, or null)}], "
                        "not_ranked: {no_size, no_ratio, excluded, not_succeeded: the ids of the job's runs "
                        "that cannot be set against its runtime model, by why}}")
    p.set_defaults(func=run)


def _level(text: str) -> float:
    """``--threshold``: ``0.1``, or ``10%`` as the output writes it (the range is
    :func:`~sparkpredict.monitor_explain._check_threshold`'s, whose error names the fix)."""
    from ..models.columns import read_level

    try:
        return read_level(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a fraction: {text!r} (write e.g. 0.1 or 10%)") from None


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:+.1f}%"


def run(args: argparse.Namespace) -> int:
    import json

    from .. import monitor
    from ..errors import InputError
    from ..monitor_explain import _check_count, _check_threshold
    from ..store import io
    from ..units import format_duration, format_percent

    # the API's rules, named as the command line gives them
    _check_threshold(args.threshold, "--threshold")
    top = 5 if args.top is None else args.top
    stages = 3 if args.stages is None else args.stages
    _check_count(stages, "--stages", "stages to list")
    _check_count(top, "--top", "runs to list")
    if (args.run_id is None) == (args.job is None):
        raise InputError("give a RUN_ID or --job J, not " + ("both" if args.job else "neither"),
                         "e.g. sparkpredict explain local-1700000000000, or sparkpredict explain --job nightly-etl")
    # a flag the other form reads was ignored without a word
    if args.job is None and args.top is not None:
        raise InputError("--top counts the runs of --job J; one run was given",
                         f"leave out --top, or list the job's slowest runs: sparkpredict explain --job J --top {args.top}")
    if args.job is not None and args.stages is not None:
        raise InputError("--stages lists the stages of one run; --job lists each run in one line",
                         "leave out --stages, or explain one of the listed runs: sparkpredict explain RUN_ID "
                         f"--stages {args.stages}")
    store = io.open(args.store)
    models = _training_monitor(args.training_store) if args.training_store else None
    if args.job is not None:
        return _slowest(args, monitor.slowest_runs(args.job, store, top=top, models=models,
                                                   threshold=args.threshold), store)
    e = monitor.explain_run(args.run_id, store, models, threshold=args.threshold, top_stages=stages)
    if args.json:
        print(json.dumps(e.to_dict(), indent=2, default=str))
        return 0
    label = f", recorded interference: {e.label}" if e.label and e.label != "none" else ""
    print(f"run {e.run_id} (job {e.job}{label})")
    exp = format_duration(e.expected_ms / 1000) if e.expected_ms else "unknown (no clean runs)"
    part = "" if e.matched_share >= 0.995 else f", the {e.matched_share:.0%} of it with a clean counterpart"
    print(f"  actual   {format_duration(e.actual_ms / 1000)}   (sum of stage times{part})")
    if e.wall_ms is not None:
        print(f"  wall     {format_duration(e.wall_ms / 1000)}   (start to end, what a runtime model predicts)")
    print(f"  expected {exp}   (median of {_baseline(e)}, per stage)")
    print(f"  degradation: measured {_pct(e.degradation)}, estimated from metrics "
          f"{_pct(e.estimated_degradation)}")
    verdict = "VIOLATED" if e.violated else "met"
    print(f"  QoS at {format_percent(e.threshold)}: {verdict}   "
          + "  ".join(f"{format_percent(t)}:{'over' if v else 'ok'}" for t, v in e.qos.items()))
    if e.main_cause:
        print(f"  main cause: {e.main_cause} ({e.main_share * 100:.0f}% of the estimated slowdown"
              f"{e.runner_up()})")
    elif e.cause_withheld:
        print(f"  main cause: not named ({e.withheld_because()}; see the warning)")
    else:
        print(f"  main cause: none ({e.no_cause()})")
    if e.culprit and (e.main_cause or (e.degradation or 0.0) >= monitor.CAUSE_MIN_SLOWDOWN):
        # a run not slowed waited for nothing: the classifier's prior alone, the same on every run
        print("  who took the cores Spark waited for (host counters): "
              + ", ".join(f"{g} {p * 100:.0f}%" for g, p in sorted(e.culprit.items(), key=lambda kv: -kv[1])
                          if p >= 0.005))
    if e.footprint:
        units = {"memory_held_gib": ("memory held by others", "{:+.2f} GiB", 1.0, 2),
                 "network_mib_s": ("network", "{:+,.1f} MiB/s", 1.0, 1),
                 "disk_mib_s": ("disk", "{:+,.1f} MiB/s", 1.0, 1),
                 "io_stall_share": ("time stalled on I/O", "{:+.1f}%", 100.0, 1)}

        def shown(k: str, v: float) -> str:
            name, fmt, scale, digits = units[k]
            return f"{name} " + fmt.format(round(v * scale, digits) + 0.0)  # + 0.0: no "-0.0"

        print(f"  host footprint against {e.compared_with('the clean runs')}: "
              + ", ".join(shown(k, v) for k, v in e.footprint.items()))
    print("  contributions (Shapley, points of degradation): "
          + ", ".join(f"{g} {v * 100:+.1f}" for g, v in e.contributions.items()))
    if e.stages:
        print("  stages most affected:")
        for s in e.stages:
            ref = f"{_stage_time(s.expected_ms)} expected ({_pct(s.degradation)})" \
                if s.expected_ms else f"estimated {_pct(s.estimated_degradation)}"
            print(f"    stage {s.stage_id:<4} {_stage_time(s.actual_ms):>8}  vs {ref}  "
                  f"{s.name[:60]}")
    for w in e.warnings:
        print(f"  warning: {w}")
    return 0


def _stage_time(ms: float) -> str:
    """A stage's time; below 0.1 s in milliseconds ("0.0s vs 0.0s expected (-56.2%)" hid both)."""
    from ..units import format_duration

    return f"{ms:.0f}ms" if ms < 99.5 else format_duration(ms / 1000)


def _training_monitor(path: str) -> Any:
    """The monitor trained on ``--training-store``; its store's errors name that flag, not --store."""
    from .. import monitor
    from ..errors import StoreError
    from ..store import io

    try:
        io.open(path)  # only where it is no store: a store's own errors keep their fixes
    except StoreError as exc:
        raise StoreError(f"--training-store: {exc.message}",
                         "give the folder of a store that holds labelled runs (--training-store T), or "
                         "leave it out: the store's own labelled runs, else the bundled dataset") from exc
    return monitor.cached_monitor(path)


def _baseline(e: Any) -> str:
    """Which runs the expected time comes from: "3 other clean runs of the job", or, for a job
    without labels, "2 other runs of the job with its setup (1 executor of ...)"."""
    from ..monitor_baseline import ANY_SETUP, SAME_SETUP
    from ..units import plural

    if e.baseline == SAME_SETUP:
        return f"{plural(e.clean_runs, 'other run')} of the job with its setup: {e.baseline_setup}"
    if e.baseline == ANY_SETUP:
        return f"{plural(e.clean_runs, 'other run')} of the job on any setup, none on its own (see the warning)"
    return f"{plural(e.clean_runs, 'other clean run')} of the job"


def _slowest(args: argparse.Namespace, found: list[Any], store: Any) -> int:
    import json

    if not found:  # before --json's list: an empty one would read as "no slow run", exit 0
        raise _unranked(args.job, store)
    if all(r.explanation is None for r in found):  # nothing listed is explained: an error, not a list
        from ..errors import UnknownJobError

        raise UnknownJobError(f"no run of job {args.job!r} could be explained: {found[0].error}"
                              + (f" (and {len(found) - 1} more)" if len(found) > 1 else ""),
                              # the first failure's own fix: "record another run" contradicted an
                              # error that said the job's runs were other applications
                              found[0].fix or f"record another run of job {args.job!r} undisturbed, "
                              "to compare its runs with, then explain again")
    from .. import monitor

    unranked = monitor.unranked_runs(args.job, store)
    if args.json:
        print(json.dumps({"job": args.job,
                          "runs": [{"run_id": r.run_id, "runtime_over_model": r.runtime_over_model,
                                    "out_of_fold": r.out_of_fold, "error": r.error,
                                    "explanation": None if r.explanation is None else r.explanation.to_dict()}
                                   for r in found],
                          "not_ranked": unranked}, indent=2, default=str))
        return 0
    from ..models.hybrid import MIN_RUNS
    from ..units import plural

    first = found[0]
    if first.runtime_over_model is None:
        # in sample, the replay's prediction for a run can be that run: a ratio would read 1.00x
        n = first.model_runs or 0
        why = f"only {plural(n, 'run')}, too few for a runtime model fitted without each (it needs " \
            f"{MIN_RUNS})" if n < MIN_RUNS else "its runtime model replays the run itself"
        print(f"job {args.job}: {why}: its runs by their slowdown against the job's clean runs")
    else:
        # a long --top reaches runs below the model: "furthest above" would not hold for them
        above = sum((r.runtime_over_model or 0) > 1 for r in found)
        top = "its run furthest" if len(found) == 1 else f"its {len(found)} runs furthest"
        which = f"{top} above its runtime model" if above == len(found) else \
            f"{len(found)} of its runs by their runtime over its runtime model ({above} above it)"
        how = "(recorded runtime / the model's prediction for it, fitted without it)" if first.out_of_fold \
            else ("(recorded runtime / the model's in-sample prediction for it: fitted with it, the "
                  "model may follow a slowed run closely)")
        print(f"job {args.job}: {which} {how}")
    for r in found:
        said = r.explanation.summary() if r.explanation is not None else \
            f"run {r.run_id}: not explained: {r.error}"
        print(f"  {r.runtime_over_model:5.2f}x  {said}" if r.runtime_over_model is not None
              else f"  {said}")
    left = _not_ranked(unranked)
    if left:
        print(left)
    if any(r.explanation is not None for r in found):  # else the command would only fail too
        print("explain one run in full: sparkpredict explain RUN_ID")
    return 0


def _not_ranked(unranked: dict[str, list[str]]) -> str | None:
    """The line that says which of the job's runs the listing could not hold, and why: a
    `--top 50` that listed 23 of a job's 26 runs said nothing of the other 3. Their ids where
    they are few, else where they are listed."""
    from ..monitor import UNRANKED
    from ..units import plural

    ids = [r for why in UNRANKED for r in unranked.get(why, [])]
    if not ids:
        return None
    parts = [f"{len(unranked[why])} {words}" for why, words in UNRANKED.items() if unranked.get(why)]
    which = ": " + " ".join(ids) if len(ids) <= 3 else " (--json lists them under not_ranked)"
    return (f"{plural(len(ids), 'run')} of the job cannot be set against its runtime model, so "
            f"{'is' if len(ids) == 1 else 'are'} not ranked here: {'; '.join(parts)}; explain "
            f"{'it' if len(ids) == 1 else 'each'} against the job's clean runs alone (sparkpredict explain RUN_ID){which}")


def _unranked(job: str, store: Any) -> Exception:
    """Why no run of ``job`` could be set against its runtime model, with a fix that can be
    acted on: a run recorded from an event log cannot be submitted again with the input size
    its log did not declare, but its stored run can be given one (``store edit --input-size``)."""
    from ..errors import InputError
    from ..units import plural

    runs = store.runs()
    mine = runs[runs["job"] == job]
    sized = int((mine["input_bytes"] > 0).sum()) if "input_bytes" in mine else 0  # NaN: none
    message = (f"no run of job {job!r} can be set against its runtime model: none has an input "
               "size, executors and a runtime recorded")
    logged = "source" in mine and len(mine) > 0 and bool(mine["source"].eq("eventlog").all())
    if logged and not sized and len(mine) == 1:
        # "explain its runs one at a time" then failed too: explain compares a run with the others
        import shlex

        return InputError(
            message + "; its one run was ingested from an event log that declared no input size, "
            "and explain compares a run with other runs of its job, which has none",
            "ingest event logs of other runs of the same application under its job name "
            f"(sparkpredict ingest LOG... --store {shlex.quote(str(store.path))} --job {shlex.quote(job)}), "
            "then explain them one at a time (sparkpredict explain RUN_ID)")
    if logged and not sized:
        return InputError(
            message + f"; its {plural(len(mine), 'run')} {'was' if len(mine) == 1 else 'were'} "
            "ingested from event logs that declared no input size (spark.sparkpredict.inputBytes), "
            "and their stages read none from storage (data made in memory, or a source Spark does "
            "not count)",
            "explain its runs one at a time, each against the job's other runs (sparkpredict "
            f"explain RUN_ID; `sparkpredict store summary --store {store.path}` lists them): that "
            "needs no size. A written log cannot be given one, but its recorded run can: "
            f"sparkpredict store edit RUN_ID... --input-size SIZE --store {store.path}; runs "
            "submitted from now on with a declared size (sparkpredict submit --input-size SIZE) "
            "can be ranked. If the job's runs are different applications that share an app name, "
            "ingest each one's logs under a job name of its own (sparkpredict ingest LOG... --job "
            "NAME), or move runs already recorded (sparkpredict store edit RUN_ID... --job NAME)")
    return InputError(message, "declare the input size of its runs (--conf spark.sparkpredict.inputBytes=SIZE, "
                               "or sparkpredict submit --input-size SIZE; for runs already recorded, "
                               "sparkpredict store edit RUN_ID... --input-size SIZE); explain single "
                               "runs by RUN_ID meanwhile")
