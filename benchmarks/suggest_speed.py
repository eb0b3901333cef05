"""Speed of the advice: suggest_executors with fitted models in memory, and the CLI from a cold start.

1. In memory: ``suggest_executors(job, size, deadline_s=..., models={job: model})`` for the
   default candidate range (1..2x the largest count seen), an explicit list of 6 counts, and a
   1..1000 range (thinned to a ~256-count grid); reference: the model's own
   ``predict_interval`` on the same candidates (the floor the advice cannot beat).
2. Cold CLI: ``sparkpredict suggest --models DIR`` in a new process, alternated with the
   reference ``python -c "import numpy"`` (interpreter + numpy, which the CLI needs anyway).
   ``-X importtime`` of the CLI process is summarised by top-level package.

    python benchmarks/suggest_speed.py [--repeats 7]
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import publish
from c3o_data import load_c3o

VENV_BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[1]
GOAL_MEM_MS = 20.0
GOAL_CLI_S = 1.5


def fitted(job: str = "sort"):
    from sparkpredict.models.persist import fit_job

    df = load_c3o(job)
    df = df[df.machine_type == "r4.2xlarge"]
    runs = df[["job", "input_bytes", "executors", "executor_cores", "executor_memory_mb", "runtime_s"]]
    return fit_job(runs), float(df.input_bytes.median()), float(df.runtime_s.median())


def time_calls(fn, n: int) -> list[float]:
    fn()  # warm caches (imports, first numpy calls)
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def in_memory(model, size: float, deadline: float, n: int = 200) -> list[tuple[str, float, float, int]]:
    from sparkpredict.advise import suggest_executors

    rows = []
    cases = {"default range": {}, "6 explicit counts": {"executor_counts": [2, 4, 6, 8, 10, 12]},
             "range 1..1000": {"max_executors": 1000}}
    for label, kw in cases.items():
        a = suggest_executors("sort", size, deadline_s=deadline, models={"sort": model}, **kw)
        e = np.array([c.executors for c in a.candidates], float)
        X = {"input_bytes": np.full(len(e), size), "executors": e,
             "executor_cores": np.full(len(e), 8.0), "executor_memory_mb": np.full(len(e), 4096.0)}
        adv, ref = [], []
        for _ in range(n // 20):  # alternate advice and reference in blocks
            adv += time_calls(lambda kw=kw: suggest_executors("sort", size, deadline_s=deadline,
                                                              models={"sort": model}, **kw), 20)
            ref += time_calls(lambda X=X: model.predict_interval(X, 0.9), 20)
        rows.append((label, statistics.median(adv), statistics.median(ref), len(e)))
    return rows


def cold_cli(model_dir: str, size: float, deadline: float, repeats: int) -> tuple[list[float], list[float], str]:
    cli = [str(VENV_BIN / "sparkpredict"), "suggest", "--job", "sort", "--input-size", str(int(size)),
           "--deadline", str(deadline), "--models", model_dir]
    ref = [sys.executable, "-c", "import numpy"]
    t_cli, t_ref = [], []
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="0")
    for _ in range(repeats):
        for cmd, acc in ((cli, t_cli), (ref, t_ref)):
            t = time.perf_counter()
            p = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
            acc.append(time.perf_counter() - t)
            if p.returncode != 0:
                raise SystemExit(f"{cmd} failed: {p.stderr}")
    p = subprocess.run([sys.executable, "-X", "importtime", "-c",
                        "import sys; from sparkpredict.cli import main; sys.exit(main(sys.argv[1:]))",
                        *cli[1:]], capture_output=True, text=True, env=env, check=True)
    by_pkg: dict[str, int] = defaultdict(int)
    for line in p.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if m and len(m.group(3)) == 1:  # top-level imports: their cumulative time
            by_pkg[m.group(4).split(".")[0]] += int(m.group(2))
    top = sorted(by_pkg.items(), key=lambda kv: -kv[1])[:8]
    heavy = [k for k in ("pandas", "sklearn", "scipy", "pyspark", "pyarrow") if k in by_pkg]
    imports = ", ".join(f"{k} {v / 1e3:.0f} ms" for k, v in top) + \
        f"; heavy packages imported: {', '.join(heavy) if heavy else 'none'}"
    return t_cli, t_ref, imports


HISTORY_STORE = REPO / "tests" / "data" / "history"


def cold_cli_store(repeats: int) -> tuple[list[float], list[float]]:
    """``suggest --store``: the first process fits (cache empty), later ones load its fit."""
    cli = [str(VENV_BIN / "sparkpredict"), "suggest", "--job", "sort", "--input-size", "64MB",
           "--deadline", "30s", "--store", str(HISTORY_STORE)]
    first, cached = [], []
    for _ in range(max(1, repeats // 2)):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, SPARKPREDICT_CACHE=cache)
            for i in range(3):
                t = time.perf_counter()
                p = subprocess.run(cli, capture_output=True, text=True, env=env, check=False)
                (first if i == 0 else cached).append(time.perf_counter() - t)
                if p.returncode != 0:
                    raise SystemExit(f"{cli} failed: {p.stderr}")
    return first, cached


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    from sparkpredict.models.persist import save_models

    model, size, deadline = fitted()
    mem = in_memory(model, size, deadline)
    with tempfile.TemporaryDirectory() as d:
        save_models({"sort": model}, d)
        t_cli, t_ref, imports = cold_cli(d, size, deadline, args.repeats)
    t_first, t_cached = cold_cli_store(args.repeats)
    load = os.getloadavg()[0]
    lines = ["## suggest speed\n",
             (f"Model: the combined JobRuntimeModel of C3O sort on r4.2xlarge ({model.name_}, "
             f"{model.n_runs_} runs); load average {load:.1f} at the end. Medians; the reference "
             "is measured alternately in the same run.\n"),
             "| in memory | candidates | suggest_executors (median) | predict_interval alone (reference) | ratio |",
             "|---|---|---|---|---|"]
    for label, adv, ref, n in mem:
        lines.append(f"| {label} | {n} | {adv:.2f} ms | {ref:.2f} ms | {adv / ref:.1f}x |")
    cli, ref = statistics.median(t_cli), statistics.median(t_ref)
    lines += ["", "| cold process | median | min | max |", "|---|---|---|---|",
              f"| `sparkpredict suggest --models DIR` | {cli:.2f} s | {min(t_cli):.2f} s | {max(t_cli):.2f} s |",
              f"| reference `python -c 'import numpy'` | {ref:.2f} s | {min(t_ref):.2f} s | {max(t_ref):.2f} s |",
              (f"| `sparkpredict suggest --store tests/data/history`, first call (fits, caches the fit) "
              f"| {statistics.median(t_first):.2f} s | {min(t_first):.2f} s | {max(t_first):.2f} s |"),
              (f"| the same, later calls (load the cached fit) | {statistics.median(t_cached):.2f} s "
              f"| {min(t_cached):.2f} s | {max(t_cached):.2f} s |"),
              "", f"CLI imports (cumulative, top level): {imports}. CLI / reference = {cli / ref:.1f}x.\n"]
    worst = max(adv for _, adv, _, _ in mem[:2])
    lines.append(f"- goal suggest_executors <= {GOAL_MEM_MS:.0f} ms with models in memory: "
                 f"**{'met' if worst <= GOAL_MEM_MS else 'not met'}** ({worst:.2f} ms, default range / "
                 f"explicit counts; {mem[2][1]:.2f} ms over a 1..1000 range)")
    lines.append(f"- goal CLI <= {GOAL_CLI_S} s from a cold start with --models: "
                 f"**{'met' if cli <= GOAL_CLI_S else 'not met'}** (median {cli:.2f} s of {args.repeats})")
    cached, first = statistics.median(t_cached), statistics.median(t_first)
    lines.append(f"- the same goal with `--store` (no retrain, no model folder): "
                 f"**{'met' if max(cached, first) <= GOAL_CLI_S else 'not met'}**: the first call "
                 f"after new runs fits the job's model (median {first:.2f} s of {len(t_first)}, max "
                 f"{max(t_first):.2f} s; numpy and scipy only, no scikit-learn), later calls load the "
                 f"cached fit (median {cached:.2f} s of {len(t_cached)}). Runs recorded by "
                 "`sparkpredict submit` or `sweep` have their job's model fitted as they end, so "
                 "even that first call loads it")
    publish("suggest_speed", lines, write=not args.no_write)


if __name__ == "__main__":
    main()
