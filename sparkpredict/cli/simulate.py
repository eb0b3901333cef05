"""``sparkpredict simulate``: replay one recorded run on other executor counts.

Always prints the replay's own error at the executor count the run actually used first, so
the predictions below it can be judged.
"""
from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "simulate", help="replay a recorded run on other executor counts (what-if)",
        description="Replay a run's recorded tasks through a scheduler with other executor counts "
                    "(stage dependencies and driver time kept). Prints its own error at the "
                    "executor count actually used, then the predictions.")
    p.add_argument("run", metavar="RUN_ID",
                   help="run id in the store, or the path of a Spark event log to replay directly")
    p.add_argument("--executors", default="1,2,4,8", metavar="E1,E2,...",
                   help="executor counts to simulate, e.g. 1,2,4,8 (the default) or 1-4")
    p.add_argument("--cores", type=int, metavar="C",
                   help="cores per executor (default: as recorded); each task takes the run's "
                        "spark.task.cpus of them")
    p.add_argument("--host-cores", type=int, metavar="H",
                   help="physical cores all executors share (local-cluster on one machine): "
                        "tasks beyond them (each taking spark.task.cpus of them) only time-share the CPUs")
    p.add_argument("--store", metavar="S", help="history store (default: spark.sparkpredict.store of spark-defaults.conf, else $SPARKPREDICT_STORE, else ~/.sparkpredict/store)")
    p.add_argument("--json", action="store_true",
                   help="print the report as JSON: run_id, job, actual_executors, actual_cores, "
                        "executors_mean (alive on average: below actual_executors under dynamic "
                        "allocation, whose most the replay holds throughout; null on a local master), "
                        "runtime_s (recorded, as in the runs table), self_error ((replayed - recorded) / "
                        "recorded at the actual count, a fraction), n_tasks, n_stages, task_cpus, status, "
                        "self_check and predictions (each: executors, cores, slots, running_slots (those "
                        "that run at once: fewer than slots on --host-cores), predicted_runtime_s, "
                        "lower_bound_s, busy_fraction), warnings")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import os

    from ..models import simulate as sim
    from ..units import parse_counts

    # ranges too, as sweep --executors; sorted and distinct, as suggest's (3,3,1 printed the
    # used count twice, and in that order)
    counts = sorted(set(parse_counts(args.executors, wide_fix=False)))
    warnings: list[str] = []
    if os.path.exists(args.run):
        from ..capture.eventlog import parse_event_log

        parsed = parse_event_log(args.run)
        if parsed.backward_tasks is not None:
            from ..errors import InputError

            # a replay of tasks ending before they start is no answer (the store's refusal of
            # such rows, in the timeline, named a store this log is not in); the log's other
            # false times do not move a replay, and the stored run's replay does not refuse them
            raise InputError(f"{args.run}: {parsed.backward_tasks}",
                             "replay another run's log; if this one was altered, replay an intact copy of it")
        # what the log lacks (a cut end, undecodable data) changes what "recorded" means below
        warnings = list(parsed.warnings)
        t = parsed.tables
        tl = sim.Timeline.from_tables(t["runs"], t["stages"], t["tasks"])
    elif _names_a_file(args.run):
        from ..errors import InputError

        raise InputError(f"no such file: {args.run}",
                         "give the path of an existing Spark event log, or a run id of the store "
                         "(sparkpredict store summary lists them)")
    else:
        from ..store import io as store_io

        st = store_io.open(args.store)  # once, for the timeline and the host samples
        tl = sim.load_timeline(st, args.run)
        if args.host_cores is None:
            warnings += _oversubscribed(st, tl)
    if tl.n_stages == 0:
        warnings.append("the run ran no stage: its runtime is driver time alone, the same at every "
                        "executor count")
    rep = sim.simulate_timeline(tl, counts, args.cores, host_cores=args.host_cores)
    if args.json:
        import json

        print(json.dumps({**rep.to_dict(), "warnings": warnings}, indent=2, default=str))
    else:
        print(format_report(rep, warnings))
    return 0


def _oversubscribed(st: Any, tl: Any) -> list[str]:
    """A warning when the run had more task slots than its one host's CPUs (``local[3]`` on 2
    cores, local-cluster): its tasks' recorded durations include that sharing, so a replay at
    fewer slots keeps tasks slower than they would run there (the demo's 3-thread run replayed
    5.2 s at 1 executor; the 1-executor run at that size took 1.35 s)."""
    from ..units import plural

    # a sample without a CPU count (/proc/stat unreadable, other files read) says nothing here
    hs = st.read("host_samples", run_ids=[tl.run_id], columns=["host", "cpu_count"]).dropna(subset=["cpu_count"])
    if hs.empty or hs["host"].nunique() != 1:  # several hosts: a cluster, its slots spread over them
        return []
    cpus = int(hs["cpu_count"].max())
    slots = tl.executors * max(tl.cores // max(tl.task_cpus, 1), 1)
    if not 0 < cpus < slots * tl.task_cpus:
        return []
    return [(f"the run had {plural(slots, 'task slot')} of {plural(tl.task_cpus, 'core')} on one host of "
            f"{cpus} CPUs: its tasks shared them, so their "
            f"recorded durations are slower than with {cpus} cores in use or fewer, and the replay there "
            f"keeps them slow; --host-cores {cpus} replays every count on that host's CPUs")]


def _names_a_file(word: str) -> bool:
    """A path, not a run id: run ids (``app-...``, ``application_..._0001/1``, ``local-...``)
    never start with a path's first characters nor end in an event log's suffix."""
    from ..capture.codecs import codec_of

    name = word.rstrip("/").rsplit("/", 1)[-1]
    return word.startswith(("/", "./", "../", "~")) or name.endswith((".json", ".inprogress", ".log")) \
        or codec_of(name) is not None


def format_report(rep: Any, warnings: list[str] | None = None) -> str:
    """The report as text: the log's warnings, self-check, then one line per executor count."""
    from ..units import format_duration as dur
    from ..units import format_executors, plural

    sc = rep.self_check
    used = plural(rep.actual_executors, "executor")
    mean = getattr(rep, "executors_mean", None)
    # dynamic allocation: the replay holds the most the run had for its whole length
    held = f" at most ({format_executors(mean)} on average)" \
        if mean is not None and mean < rep.actual_executors - 0.005 else ""
    task_cpus = getattr(rep, "task_cpus", 1)
    per_task = f" ({task_cpus} per task: spark.task.cpus)" if task_cpus > 1 else ""
    status = getattr(rep, "status", None)
    ended = f" ({status}: to its last event)" if status == "incomplete" else \
        f" ({status})" if status in ("failed", "killed", "running") else ""
    lines = [f"warning: {w}" for w in warnings or []]
    lines += [
        f"run {rep.run_id}" + (f" (job {rep.job})" if rep.job else "")
        + f": {used}{held} x {plural(rep.actual_cores, 'core')}{per_task}, {plural(rep.n_tasks, 'task')} "
          f"in {plural(rep.n_stages, 'stage')}, recorded {dur(rep.runtime_s)}{ended}",
        (f"self-check at {used} ({'the most it held' if held else 'actually used'}): replay "
         f"{dur(sc.predicted_runtime_s)}, "
         f"error {rep.self_error * 100:+.1f}%"),
        "",
    ]
    # --host-cores: fewer slots run at once than the executors have, and durations are rescaled
    capped = any(getattr(p, "running_slots", p.slots) not in (0, p.slots) for p in rep.predictions) or \
        getattr(rep.self_check, "running_slots", 0) not in (0, rep.self_check.slots)
    head = f"{'executors':>9} {'cores':>5} {'slots':>6}" + (f" {'at once':>7}" if capped else "")
    lines.append(f"{head} {'predicted':>11} {'replay floor':>12} {'slots busy':>10}")
    for p in rep.predictions:
        mark = "  <- used" if p.executors == rep.actual_executors and p.cores == rep.actual_cores else ""
        at_once = f" {getattr(p, 'running_slots', 0) or p.slots:>7}" if capped else ""
        lines.append(f"{p.executors:>9} {p.cores:>5} {p.slots:>6}{at_once} {dur(p.predicted_runtime_s):>11} "
                     f"{dur(p.lower_bound_s):>12} {p.busy_fraction * 100:>9.0f}%{mark}")
    lines.append("")
    if capped:
        lines.append("On the host's cores (--host-cores), slots beyond them only share CPUs: 'at once' is "
                     "what runs together, and the recorded durations are divided by the recording's own "
                     "oversubscription of those cores; 'slots busy' is measured against 'at once'. More "
                     "executors cannot shorten driver time or the longest task of a stage. The replay floor "
                     "holds for these durations only: a real run, whose tasks run faster or slower, can beat it.")
    else:
        lines.append("Tasks keep their recorded durations; more executors cannot shorten driver time or "
                     "the longest task of a stage, and contention the recording did not have is not modelled. "
                     "The replay floor (critical path, and work over slots) holds for these durations only: "
                     "a real run at another count, whose tasks run faster or slower, can beat it.")
    return "\n".join(lines)
