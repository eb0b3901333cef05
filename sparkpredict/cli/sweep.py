"""``sparkpredict sweep``: run a workload over sizes x executors x repeats, recorded by the listener."""
from __future__ import annotations

import argparse
import sys

from .store_cmd import add_no_compact


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep", help="run a workload over sizes x executor counts, each run recorded",
        description="Run a HiBench-style workload at every size x executor count x repeat, each as "
                    "its own Spark application recorded by the listener. Rerunning the same command "
                    "resumes: runs already recorded as succeeded are skipped. Ctrl-C stops after "
                    "cancelling the running run (recorded as failed) and exits 130; SIGTERM and SIGHUP "
                    "alike, exiting 128 + the signal's number.")
    p.add_argument("--workload", required=True,
                   help="wordcount, sort, kmeans, pagerank, logreg or sqljoin")
    p.add_argument("--sizes", required=True, help="input sizes, e.g. 64MB,128MB,256MB")
    p.add_argument("--executors", default="1,2,3", help="executor counts, e.g. 1,2,3 or 1-4 (default 1,2,3)")
    p.add_argument("--repeats", type=int, default=1, help="runs per combination (default 1)")
    p.add_argument("--master", default=None,
                   help="master template (default local-cluster[{executors},{cores},{memory_mb}]; "
                        "'local' = local[{executors}] threads; yarn etc. get spark.executor.instances; "
                        "a fixed local[N] or local-cluster[N,..] only with --executors N)")
    p.add_argument("--executor-cores", type=int, default=1,
                   help="cores per executor (default 1); the default master template's {cores}")
    p.add_argument("--executor-memory", default="1024MiB", help="per executor (default 1024MiB)")
    p.add_argument("--seed", type=int, default=0,
                   help="data generator seed (default 0); runs of another seed are not taken as done")
    p.add_argument("--store", default=None, help="history store (default: $SPARKPREDICT_STORE, else ~/.sparkpredict/store; not a cluster store of spark-defaults.conf)")
    p.add_argument("--cache", default=None,
                   help="generated-data cache (default $SPARKPREDICT_CACHE/data, else ~/.cache/sparkpredict/data)")
    p.add_argument("--workdir", default=None, metavar="DIR",
                   help="Spark's scratch and the warm-up's scratch store (default: sweep-work beside the "
                        "store; ~/.sparkpredict/sweep-work for a remote store)")
    p.add_argument("--no-tasks", action="store_true", help="do not record task rows (smaller store)")
    add_no_compact(p, "between runs")
    p.add_argument("--spark-logs", action="store_true",
                   help="show Spark's own log lines (default: Spark's errors only, unless you set a log4j configuration)")
    p.set_defaults(func=_run)


class ProgressBar:
    """A one-line progress bar with the estimated time left, on stderr."""

    def __init__(self, stream=None, width: int = 28) -> None:
        # sys.stderr when called, not when imported: a test's captured stream is closed by now
        self.stream, self.width = stream or sys.stderr, width
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()

    def __call__(self, done: int, total: int, elapsed: float, eta: float | None, label: str) -> None:
        from ..units import format_duration

        if total == 0:  # every run of the grid was recorded before: no bar of 0/0 runs
            self.stream.write(f"nothing left to run: {label}\n")
            self.stream.flush()
            return
        fill = int(round(done / total * self.width))
        bar = "#" * fill + "." * (self.width - fill)
        eta_s = "ETA ?" if eta is None else f"ETA {format_duration(eta)}"
        line = f"[{bar}] {done}/{total} runs  {format_duration(elapsed)} elapsed  {eta_s}  {label}"
        if self.tty:
            self.stream.write("\r\033[K" + line + ("\n" if done == total else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


def failed_line(o) -> str:
    """The line a failed run of the sweep gets: its size as every command writes sizes."""
    from ..units import format_bytes

    return (f"  failed: {format_bytes(o.combo.size_bytes)} x {o.combo.executors} executors "
            f"(repeat {o.combo.repeat}): {o.error}")


def _run(args: argparse.Namespace) -> int:
    from ..sweep import plan_sweep, run_sweep
    from ..units import format_bytes, format_duration, parse_memory_mb, plural

    mem_mb = parse_memory_mb(args.executor_memory)
    plan = plan_sweep(args.workload, args.sizes, args.executors, repeats=args.repeats, master=args.master,
                      executor_cores=args.executor_cores, executor_memory_mb=mem_mb, seed=args.seed)
    print(f"sweep {plan.workload}: sizes {', '.join(format_bytes(s) for s in plan.sizes_bytes)}; "
          f"executors {', '.join(map(str, plan.executors))}; {plan.repeats} repeat(s); "
          f"{len(plan.combos)} runs; master {plan.master_template}", file=sys.stderr)
    try:
        res = run_sweep(plan, store=args.store, cache_dir=args.cache, workdir=args.workdir,
                        progress=ProgressBar(), tasks=not args.no_tasks, spark_logs=args.spark_logs,
                        compact=args.compact)
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", None)  # Terminated: SIGTERM, SIGHUP
        what = "interrupted" if signum is None else f"terminated (signal {signum})"
        print(f"\n{what}: runs finished so far are recorded; rerun the same command to resume",
              file=sys.stderr)
        return 130 if signum is None else 128 + signum
    print(f"{plural(len(res.ran), 'run')} in {format_duration(res.seconds)} "
          f"({len(res.skipped)} already recorded, {len(res.failed)} failed); store: {res.store}")
    for o in res.failed:
        print(failed_line(o), file=sys.stderr)
    if res.compactions:
        merged = sum(c.merged for c in res.compactions)
        print(f"merged {plural(merged, 'small batch', 'small batches')} of the store into "
              f"{sum(c.written for c in res.compactions)} between runs (`store compact`'s defaults)",
              file=sys.stderr)
    from ..advice_cache import prepare_advice

    # the history a sweep builds is for advice: fitted now, the next suggest loads it
    prepare_advice(res.store, [o.app_id for o in res.ran if o.app_id])
    return 1 if res.failed else 0
