"""Reading a store of many runs, before and after ``sparkpredict store compact``.

The store is built the way the listener writes one: a batch per run, each with its runs,
stages and tasks files (copies of tests/data/history's runs, renamed, 50 jobs). Measured on
it, uncompacted (the reference) and then compacted, in the same run:

1. ``Store.read`` of runs, stages and tasks, and of one run's tasks (in this process, the
   median of ``--repeats``);
2. ``sparkpredict suggest --store`` in a new process: the first call, with an empty fit cache,
   and a call that finds the first one's fit cached (the median of ``--repeats`` each);
3. ``sparkpredict store compact`` itself, once;
4. a store written as ``sparkpredict submit`` writes it (``auto_compact`` after each run), at
   the moment before its next compaction: 1. and 2. again, and what the ``auto_compact`` calls cost;
5. on a smaller store of ``--slow-runs`` runs whose file system waits 30 ms on every listing and
   file open (a remote store such as S3, simulated), the reads of 1., uncompacted and compacted.

Goal (issue #5): the CLI answers in <= 1.5 s from a cold start.

    python benchmarks/store_reads.py [--runs 3000] [--repeats 5] [--slow-runs 300] [--keep DIR]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import publish

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
GOAL_CLI_S = 1.5
JOBS = 50
SLOW_DELAY_S = 0.03


def build(path: Path, n: int, auto: list[tuple[float, bool]] | None = None, start: int = 0) -> float:
    """``n`` one-run batches; returns the seconds it took. With ``auto``, after each batch
    ``auto_compact`` as ``sparkpredict submit`` calls it, each call's (seconds, whether it
    compacted) appended to ``auto``."""
    from sparkpredict import store
    from sparkpredict.store.compact import auto_compact

    src = store.open(REPO / "tests" / "data" / "history")
    runs, stages, tasks = (src.read(t) for t in ("runs", "stages", "tasks"))
    st = store.open(path, create=True)
    t0 = time.perf_counter()
    for i in range(start, start + n):
        r = runs.iloc[[i % len(runs)]].copy()
        old, rid = r.run_id.iloc[0], f"app-{i:06d}"
        r["run_id"] = r["app_id"] = rid
        r["job"] = f"job{i % JOBS}"
        st.append({"runs": r, "stages": stages[stages.run_id == old].assign(run_id=rid),
                   "tasks": tasks[tasks.run_id == old].assign(run_id=rid)})
        if auto is not None:
            t1 = time.perf_counter()
            done = auto_compact(st)
            auto.append((time.perf_counter() - t1, done is not None))
    return time.perf_counter() - t0


def auto_store(path: Path, n: int) -> tuple[list[tuple[float, bool]], int]:
    """``n`` runs written as ``sparkpredict submit`` writes them (an ``auto_compact`` after
    each), then more without it up to the moment before the next compaction (the most small
    batches a reader of such a store meets). Returns the seconds of each ``auto_compact`` call
    and the runs written in all."""
    from sparkpredict.store.compact import AUTO_BATCHES, pending

    auto: list[tuple[float, bool]] = []
    build(path, n, auto)
    extra = AUTO_BATCHES - 1 - pending(str(path))
    build(path, extra, start=n)
    return auto, n + extra


def du(path: Path) -> tuple[int, int]:
    files = [p for p in path.rglob("*.parquet") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def _timed(code: str, args: list[str], repeats: int) -> dict[str, float]:
    """Median seconds per name of the ``name seconds`` lines that ``python -c code *args`` prints,
    in a fresh process per repeat (no warm caches in Python)."""
    got: dict[str, list[float]] = {}
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                             check=True).stdout
        for line in out.splitlines():
            name, secs = line.rsplit(" ", 1)
            got.setdefault(name, []).append(float(secs))
    return {k: statistics.median(v) for k, v in got.items()}


def reads(path: Path, repeats: int) -> dict[str, float]:
    """Median seconds of each read, in a fresh process per repeat."""
    code = ("import sys, time\nfrom sparkpredict import store\nst = store.open(sys.argv[1])\n"
            "for t in ('runs', 'stages', 'tasks'):\n"
            "    t0 = time.perf_counter(); st.read(t, form='arrow'); print(t, time.perf_counter() - t0)\n"
            "t0 = time.perf_counter(); st.read('tasks', run_ids=['app-000007']); "
            "print('one run', time.perf_counter() - t0)\n")
    return _timed(code, [str(path)], repeats)


#: A file system that answers as a remote store would: every listing and file open waits.
SLOW_FS = """
import sys, time
from sparkpredict import store
class Slow:
    def __init__(self, fs, delay):
        self._fs, self._delay = fs, delay
    def __getattr__(self, name):
        f = getattr(self._fs, name)
        if name not in ("open_input_file", "open_input_stream", "get_file_info"):
            return f
        def slow(*a, **k):
            time.sleep(self._delay)
            return f(*a, **k)
        return slow
st = store.open(sys.argv[1])
st.fs = Slow(st.fs, float(sys.argv[2]))
for t in ("runs", "stages", "tasks"):
    t0 = time.perf_counter(); st.read(t, form="arrow"); print(t, time.perf_counter() - t0)
"""


def slow_reads(path: Path, delay_s: float, repeats: int) -> dict[str, float]:
    """Median seconds of each read when every listing and open waits ``delay_s`` (a new process
    per repeat: the compacted files' footers are read cold)."""
    return _timed(SLOW_FS, [str(path), str(delay_s)], repeats)


def cli(path: Path, repeats: int) -> tuple[float, float]:
    """Median seconds of ``suggest --store``: first call (empty fit cache), then cached."""
    cmd = [str(VENV_BIN / "sparkpredict"), "suggest", "--job", "job1", "--input-size", "64MB",
           "--deadline", "30s", "--store", str(path)]
    first, cached = [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, SPARKPREDICT_CACHE=cache)
            for acc in (first, cached):
                t0 = time.perf_counter()
                p = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
                acc.append(time.perf_counter() - t0)
                if p.returncode != 0:
                    raise SystemExit(f"{' '.join(cmd)} failed: {p.stdout}{p.stderr}")
    return statistics.median(first), statistics.median(cached)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--slow-runs", type=int, default=300, help="runs of the simulated remote store")
    ap.add_argument("--keep", help="build the store here and leave it (default: a temporary folder)")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="store-reads-"))
    path = base / "store"
    if path.exists():
        shutil.rmtree(path)
    try:
        built_s = build(path, args.runs)
        files_before, bytes_before = du(path)
        print(f"built {args.runs} batches ({files_before} files, {bytes_before / 1e6:.0f} MB) in {built_s:.0f} s")
        before = reads(path, args.repeats)
        cli_before = cli(path, args.repeats)
        print("uncompacted:", before, cli_before)
        t0 = time.perf_counter()
        out = subprocess.run([str(VENV_BIN / "sparkpredict"), "store", "compact", "--store", str(path),
                              "--keep", "0"], capture_output=True, text=True, check=True).stdout
        compact_s = time.perf_counter() - t0
        print(out.strip(), f"({compact_s:.1f} s)")
        files_after, bytes_after = du(path)
        after = reads(path, args.repeats)
        cli_after = cli(path, args.repeats)
        print("compacted:", after, cli_after)
        # a remote store, simulated: 30 ms per listing and per file open, on a smaller store
        small = base / "small"
        build(small, args.slow_runs)
        slow_before = slow_reads(small, SLOW_DELAY_S, args.repeats)
        subprocess.run([str(VENV_BIN / "sparkpredict"), "store", "compact", "--store", str(small),
                        "--keep", "0"], capture_output=True, text=True, check=True)
        slow_after = slow_reads(small, SLOW_DELAY_S, args.repeats)
        print(f"{SLOW_DELAY_S * 1000:.0f} ms per call:", slow_before, slow_after)
        # written through sparkpredict's writers, which compact every AUTO_BATCHES batches
        auto_path = base / "auto"
        auto, auto_runs = auto_store(auto_path, args.runs)
        from sparkpredict.store.compact import AUTO_BATCHES, pending

        auto_pending = pending(str(auto_path))
        auto_reads = reads(auto_path, args.repeats)
        cli_auto = cli(auto_path, args.repeats)
        print("auto-compacted:", auto_reads, cli_auto)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)

    def row(name: str, b: float, a: float) -> str:
        ratio = b / a
        return f"| {name} | {b:.3f} | {a:.3f} | {ratio:.{1 if ratio < 10 else 0}f}x |"

    load = os.getloadavg()[0]
    lines = ["## store reads: many runs, before and after `store compact`\n",
             (f"A store of {args.runs:,} runs written as the listener writes them, one batch per run "
             f"({files_before:,} Parquet files, {bytes_before / 1e6:.0f} MB; {JOBS} jobs of "
             f"{args.runs // JOBS} runs), read uncompacted (the reference) and then after "
             f"`sparkpredict store compact --keep 0` ({files_after} files, {bytes_after / 1e6:.1f} MB: "
             "the copies of a few runs compress well together; real runs would compress less), in the "
             f"same run. Medians of {args.repeats}, each read in a new process; load average "
             f"{load:.2f}.\n"),
             "| seconds | uncompacted | compacted | ratio |", "|---|---:|---:|---:|"]
    def read_rows(reads: dict[str, float], cli: tuple[float, float]) -> list[str]:
        """The uncompacted reads and suggest calls against ``reads`` and ``cli``'s."""
        out = [row(f"`Store.read` {k}" if k != "one run" else "`Store.read('tasks', run_ids=[one])`",
                   before[k], reads[k]) for k in ("runs", "stages", "tasks", "one run")]
        return out + [row("`suggest --store`, first call (fits)", cli_before[0], cli[0]),
                      row("`suggest --store`, fit cached", cli_before[1], cli[1])]

    lines += read_rows(after, cli_after)
    lines.append(f"\n`store compact` took {compact_s:.1f} s for the {args.runs:,} batches.\n")
    lines += [(f"A remote store, simulated: every listing and file open waits {SLOW_DELAY_S * 1000:.0f} ms "
              f"(an S3 round trip), on a store of {args.slow_runs} such runs, uncompacted and then "
              "compacted (each read in a new process, so the compacted files' footers are read cold; "
              f"medians of {args.repeats}).\n"),
              "| seconds | uncompacted | compacted | ratio |", "|---|---:|---:|---:|"]
    for k in ("runs", "stages", "tasks"):
        lines.append(row(f"`Store.read` {k}", slow_before[k], slow_after[k]))
    due = [secs for secs, compacted in auto if compacted]
    checks = [secs for secs, compacted in auto if not compacted]
    lines += [(f"\nWritten through sparkpredict's writers instead (`submit`, `ingest`, `sweep`): "
              f"{args.runs:,} runs with an `auto_compact` after each, as `submit` calls it, then "
              f"{auto_runs - args.runs} more without it, to the moment before the next compaction: "
              f"{auto_pending} small batches pending, the most such a store holds (AUTO_BATCHES = "
              f"{AUTO_BATCHES}). The {len(auto):,} calls: {len(checks):,} found nothing due (median "
              f"{statistics.median(checks) * 1000:.0f} ms, max {max(checks) * 1000:.0f} ms: a listing), "
              f"{len(due)} compacted (median {statistics.median(due) if due else 0:.1f} s, max "
              f"{max(due) if due else 0:.1f} s). The replaced files all stay, as they do for 10 minutes: "
              "here every run came within them.\n"),
              "| seconds | uncompacted | auto-compacted, worst moment | ratio |", "|---|---:|---:|---:|"]
    lines += read_rows(auto_reads, cli_auto)
    lines.append("")
    for label, (first, cached) in (("uncompacted", cli_before), ("compacted", cli_after),
                                   (f"auto-compacted ({auto_pending} batches pending)", cli_auto)):
        worst = max(first, cached)
        lines.append(f"- Goal: CLI <= {GOAL_CLI_S} s from a cold start, {label} store of {args.runs:,} runs: "
                     f"**{'met' if worst <= GOAL_CLI_S else 'not met'}** ({first:.2f} s first call, "
                     f"{cached:.2f} s cached).")
    publish("store_reads", lines, write=not args.no_write)


if __name__ == "__main__":
    main()
