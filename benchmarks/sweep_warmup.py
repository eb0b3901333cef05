"""Is a sweep's first recorded run an outlier? The warm-up before it, with and without the listener.

A sweep runs every combination in one driver JVM; the first job in a fresh JVM runs several
times slower (class loading, JIT), so the sweep first runs the workload once unrecorded. This
measures what is left: in fresh processes, a sweep of R identical runs (wordcount, 2 MB,
``local[1]``), and the first recorded run's wall time over the median of the other R - 1.

Variants, interleaved process by process so that the machine's drift hits each alike:

- ``records`` (shipped, ``sweep.WARMUP_RECORDS = True``): the warm-up is recorded by the
  listener and host sampler into a scratch store, on the first run's own local master;
- ``plain`` (reference, the warm-up before 2026-11-30): the jar on the classpath, no listener,
  on ``local[2]``;
- ``none``: no warm-up at all (why there is one).

    python benchmarks/sweep_warmup.py [--processes 6] [--repeats 6]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics as st
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _results import write_section

_CHILD = r"""
import json, sys
import sparkpredict.sweep as sw
from sparkpredict.store import io as store_io

variant, store, data, repeats = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
sw.WARMUP_RECORDS = variant != "plain"
plan = sw.plan_sweep("wordcount", "2MB", "1", repeats=repeats, master="local")
sw.run_sweep(plan, store=store, cache_dir=data, warmup=variant != "none")
runs = store_io.open(store).runs().sort_values("start_ms")
print(json.dumps([int(x) for x in runs["wall_ms"]]))
"""


def one(variant: str, repeats: int, data: str) -> list[int]:
    with tempfile.TemporaryDirectory(prefix="sp-warmup-") as tmp:
        env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
        r = subprocess.run([sys.executable, "-c", _CHILD, variant, f"{tmp}/store", data, str(repeats)],
                           capture_output=True, text=True, env=env, timeout=900, check=False)
        if r.returncode:
            sys.exit(f"{variant} sweep failed:\n{r.stderr[-3000:]}")
        return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", type=int, default=6, help="fresh processes per variant (none: a third)")
    ap.add_argument("--repeats", type=int, default=6, help="identical recorded runs per sweep")
    args = ap.parse_args()
    t0 = time.monotonic()
    walls: dict[str, list[list[int]]] = {"records": [], "plain": [], "none": []}
    with tempfile.TemporaryDirectory(prefix="sp-warmup-data-") as data:
        for i in range(args.processes):
            order = ["records", "plain"] if i % 2 == 0 else ["plain", "records"]
            if i % 3 == 0:
                order.append("none")
            for v in order:
                w = one(v, args.repeats, data)
                walls[v].append(w)
                print(f"{v:8s} {w}  first / median of the rest {w[0] / st.median(w[1:]):.2f}", flush=True)
    wall_s = time.monotonic() - t0

    def ratios(v: str) -> list[float]:
        return [w[0] / st.median(w[1:]) for w in walls[v]]

    lines = ["## Sweep warm-up: is the first recorded run an outlier? (sweep_warmup)", "",
             (f"Fresh processes, each a sweep of {args.repeats} identical recorded runs (wordcount, 2 MB, "
             "`local[1]`); per process the first run's wall time over the median of the other "
             f"{args.repeats - 1}. Variants interleaved process by process."), "",
             "| warm-up | processes | first / rest: median | min | max | rest's median wall |",
             "|---|---:|---:|---:|---:|---:|"]
    names = {"records": "recorded into a scratch store, first run's master (shipped)",
             "plain": "unrecorded, local[2] (reference: before 2026-11-30)", "none": "none"}
    for v in ("records", "plain", "none"):
        r = ratios(v)
        rest = st.median([st.median(w[1:]) for w in walls[v]])
        lines.append(f"| {names[v]} | {len(r)} | {st.median(r):.2f}x | {min(r):.2f}x | {max(r):.2f}x | "
                     f"{rest / 1000:.2f} s |")
    shipped, ref = st.median(ratios("records")), st.median(ratios("plain"))
    lines += ["", (f"Median first-run excess: shipped {shipped - 1:+.0%}, reference {ref - 1:+.0%} "
              f"(ratio of the two medians {shipped / ref:.2f}); without a warm-up "
              f"{st.median(ratios('none')) - 1:+.0%}."),
              "", "Every wall time (ms), per process:", ""]
    for v in ("records", "plain", "none"):
        lines += [f"- {v}: " + "; ".join(" ".join(str(x) for x in w) for w in walls[v])]
    lines += ["", f"Wall time {wall_s:.0f} s."]
    body = "\n".join(lines)
    print(body)
    write_section("sweep_warmup", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
