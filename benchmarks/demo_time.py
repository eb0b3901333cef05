"""How long ``sparkpredict demo`` takes from a fresh install (goal: <= 3 minutes on 2 cores).

"Fresh" means: an empty listener-jar cache (the jar is compiled, as ``./dev.sh`` does once),
an empty history store, and an empty work folder (no generated data). Measured in fresh
processes, exactly as a newcomer runs them:

1. ``sparkpredict listener build``            (fresh ``$SPARKPREDICT_CACHE``)
2. ``sparkpredict demo --store S --workdir W`` (first demo: generates, sweeps, fits, reports)
3. the same demo again                        (everything recorded: reuse path)

Reference, measured in the same run before and after: a fresh Python process that starts and
stops a plain local SparkSession (no sparkpredict), so contention from other users of the
machine shows up in the ratio.

    python benchmarks/demo_time.py
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _results import write_section

BIN = Path(sys.executable).with_name("sparkpredict")
GOAL_S = 180.0
_REF = ("from pyspark.sql import SparkSession as S; "
        "s=S.builder.master('local[2]').config('spark.ui.enabled','false').getOrCreate(); "
        "s.range(1000).count(); s.stop()")


def timed(cmd: list[str], env: dict) -> tuple[float, subprocess.CompletedProcess]:
    t = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900, check=False)
    return time.monotonic() - t, r


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="sp-demo-bench-") as tmp:
        env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARKPREDICT_CACHE=f"{tmp}/cache",
                   SPARKPREDICT_STORE=f"{tmp}/default-store-unused")
        ref1, _ = timed([sys.executable, "-c", _REF], env)
        build_s, r = timed([str(BIN), "listener", "build"], env)
        if r.returncode:
            sys.exit(f"listener build failed: {r.stderr[-2000:]}")
        demo = [str(BIN), "demo", "--store", f"{tmp}/store", "--workdir", f"{tmp}/work"]
        first_s, r1 = timed(demo, env)
        if r1.returncode:
            print(r1.stdout, r1.stderr[-4000:])
        again_s, r2 = timed(demo, env)
        ref2, _ = timed([sys.executable, "-c", _REF], env)
        report_ok = (Path(tmp) / "work" / "report.html").is_file()
    ref = (ref1 + ref2) / 2
    total = build_s + first_s
    # "1 executor, ~" as well as "3 executors, ~"
    advice = next((ln.strip() for ln in r1.stdout.splitlines() if re.search(r"\d executors?, ~", ln)),
                  "(no advice line)")
    met = total <= GOAL_S and r1.returncode == 0 and report_ok
    body = "\n".join([
        "## demo_time",
        "",
        "`sparkpredict demo` from a fresh install: empty jar cache, store and work folder; each step a fresh process.",
        "",
        "| step | seconds | / reference |",
        "|---|---|---|",
        f"| listener jar build (fresh cache) | {build_s:.1f} | {build_s / ref:.1f}x |",
        f"| first demo (generate, sweep 12 runs, fit, advise, report) | {first_s:.1f} | {first_s / ref:.1f}x |",
        f"| **fresh install total** | **{total:.1f}** | {total / ref:.1f}x |",
        f"| second demo (runs reused) | {again_s:.1f} | {again_s / ref:.1f}x |",
        (f"| reference: plain local SparkSession start+stop (mean of before {ref1:.1f} / after {ref2:.1f}) "
        f"| {ref:.1f} | 1.0x |"),
        "",
        f"Demo exit codes {r1.returncode} / {r2.returncode}; report written: {report_ok}. Advice printed: `{advice}`",
        "",
        (f"goal demo finishes in <= 3 minutes from a fresh install on 2 cores: **{'met' if met else 'not met'}** "
        f"({total:.0f} s{'' if met else '; exit code ' + str(r1.returncode)})"),
        "",
        (f"Load average (1 min) at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; the "
         "reference's before/after spread shows how steady the machine was."),
    ])
    print(body)
    if not _args().no_write:
        write_section("demo_time", body)
    return 0 if met else 1



def _args():
    """--help and --no-write (it had run the benchmark and written its section on any argument)."""
    import argparse

    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--no-write", action="store_true", help="print the figures only")
    return ap.parse_args()


if __name__ == "__main__":
    _args()  # before any work: --help or a bad option stops here
    sys.exit(main())
