"""Per-stage features of how a run's tasks spent their time, for the slowdown monitor.

Every feature is computed from the store's recorded task metrics alone (no knowledge of the
application) and belongs to one of four resource groups (:data:`GROUPS`): the monitor compares
each stage with the same stage in clean runs (:func:`with_baseline`) and attributes the change
to the groups. See :mod:`sparkpredict.models.degradation` for the estimator built on them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

GROUPS = ("cpu", "memory", "network", "disk")
WINDOWS_S = (3, 5, 10, 20)
STATS = ("mean", "min", "max", "range", "std")
#: The Spark property that labels a run's interference: ``none`` or ``<kind>:<intensity>``.
LABEL_KEY = "spark.sparkpredict.interference"

#: per-task ratio -> group; these also get the windowed statistics.
TASK_RATIOS = {"cpu_ratio": "cpu", "sched_ms": "cpu", "gc_ratio": "memory",
               "fetch_ratio": "network", "write_ratio": "disk"}
#: Where a task's run time went, in mean ms per task -> the group that stretches it. Their
#: differences from the clean baseline, over the baseline's run time, add up to the task's slowdown:
#: waiting off-CPU for a core (``wait_ms``), more CPU time for the same work (cache and memory
#: bandwidth contention, ``cpu_ms``), GC pauses, shuffle fetch waits, shuffle write time.
COMPONENTS = {"wait_ms": "cpu", "cpu_ms": "memory", "gc_ms": "memory", "fetch_ms": "network",
              "write_ms": "disk"}
#: stage-level features -> group.
STAGE_FEATURES = {**TASK_RATIOS, **COMPONENTS, "deser_ms": "cpu", "skew": "cpu", "cpu_ms_per_mib": "memory",
                  "spill_per_input": "disk"}
WINDOW_FEATURES = {f"w{w}_{m}_{s}": g for m, g in TASK_RATIOS.items() for w in WINDOWS_S for s in STATS}
#: every base feature -> its resource group.
FEATURE_GROUPS: dict[str, str] = {**STAGE_FEATURES, **WINDOW_FEATURES}
FEATURES = list(FEATURE_GROUPS)
KEY = ["run_id", "stage_id"]
#: Host counters over a stage's window (from the ``host_samples`` table, averaged over the hosts
#: of the stage's executors): shares of the host's CPU time by mode, pressure stalls as a share
#: of wall time, and I/O rates. They describe the whole host, neighbours included, so they say
#: who took the cores that Spark's tasks waited for (:class:`sparkpredict.models.degradation.DegradationModel`
#: learns the mapping); NaN where the run has no host samples (event logs, a listener without
#: the plugin). The last two are levels averaged over the window, not rates.
HOST_FEATURES = ("host_user_share", "host_system_share", "host_softirq_share", "host_iowait_share",
                 "host_steal_share", "host_psi_cpu", "host_psi_io", "host_psi_memory", "host_disk_mib_s",
                 "host_net_mib_s", "host_ctxt_k_s", "host_major_faults_s", "host_procs_running",
                 "host_mem_available_gib")
#: ``host_samples`` columns read as levels (mean over the window) -> their feature, and its scale
_LEVELS = {"procs_running": ("host_procs_running", 1.0),
           "mem_available_bytes": ("host_mem_available_gib", 1.0 / 2**30)}
_CPU_MODES = ("cpu_user_ms", "cpu_nice_ms", "cpu_system_ms", "cpu_idle_ms", "cpu_iowait_ms", "cpu_irq_ms",
              "cpu_softirq_ms", "cpu_steal_ms")
#: the cumulative ``host_samples`` columns that :func:`host_features` differences over a window
_COUNTERS = [*_CPU_MODES, "psi_cpu_some_us", "psi_io_some_us", "psi_memory_some_us", "disk_read_bytes",
             "disk_write_bytes", "net_rx_bytes", "net_tx_bytes", "context_switches", "major_page_faults"]

# ---- features -----------------------------------------------------------------------------
def _task_ratios(tasks: pd.DataFrame) -> pd.DataFrame:
    t = tasks
    run = t["executor_run_time_ms"].clip(lower=1).astype(float)
    sched = (t["duration_ms"] - t["executor_run_time_ms"] - t["executor_deserialize_time_ms"]
             - t["result_serialization_time_ms"] - t["getting_result_ms"].fillna(0)).clip(lower=0)
    # CPU share of the time not spent blocked on shuffle I/O, so that slow disks or networks
    # (which also lower CPU time / run time) do not read as CPU contention.
    busy = (t["executor_run_time_ms"] - t["shuffle_fetch_wait_ms"] - t["shuffle_write_time_ms"]).clip(lower=1)
    return t.assign(
        cpu_ratio=(t["executor_cpu_time_ms"] / busy).clip(0, 1.5),
        sched_ms=sched.astype(float),
        gc_ratio=t["jvm_gc_time_ms"] / run,
        fetch_ratio=t["shuffle_fetch_wait_ms"] / run,
        write_ratio=(t["shuffle_write_time_ms"] / run).clip(0, 1.5))


def _windowed(t: pd.DataFrame) -> pd.DataFrame:
    """Alioth's first-order statistics per window of task finish times, averaged over windows."""
    import pandas as pd

    # a stage none of whose tasks has a launch time (only a store written by neither the listener,
    # which always records one, nor the ingest, which leaves such a task no duration, so the
    # features drop it) is windowed from its first finish: a NaN start made the int cast raise
    start = t.groupby(KEY)["launch_ms"].transform("min").fillna(t.groupby(KEY)["finish_ms"].transform("min"))
    cols = list(TASK_RATIOS)
    out = []
    for w in WINDOWS_S:
        b = t[KEY + cols].assign(_bin=((t["finish_ms"] - start) // (w * 1000)).astype("int64"))
        g = b.groupby(KEY + ["_bin"])[cols]
        mean, mn, mx, std = g.mean(), g.min(), g.max(), g.std(ddof=0)
        per_bin = pd.concat({"mean": mean, "min": mn, "max": mx, "range": mx - mn, "std": std}, axis=1)
        agg = per_bin.groupby(level=KEY).mean()
        # (statistic, ratio) pairs from the concat's keys; the stubs type columns as Index[str]
        agg.columns = [f"w{w}_{m}_{s}" for s, m in cast("pd.MultiIndex", agg.columns)]
        out.append(agg)
    return pd.concat(out, axis=1)


def stage_features(stages: pd.DataFrame, tasks: pd.DataFrame,
                   host_samples: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per completed stage: identity columns, every feature in :data:`FEATURES`, and
    :data:`HOST_FEATURES` (NaN without ``host_samples``).

    Identity columns: ``run_id, stage_id, name, signature, num_tasks, duration_ms,
    submission_ms``. A stage is its succeeded attempt that ran the most tasks, with its succeeded
    tasks (a failed or killed try is no partition's work), as the stage models read it (:func:`.stages.final_attempts`): the last attempt of a
    map stage whose lost outputs were recomputed ran only those, on the executor that replaced
    the lost one, and its cold start read as a slowdown of the whole stage. A failed attempt's
    succeeded tasks join the attempt that finished its stage in part
    (:func:`.stages.fold_partial_reruns`).
    """
    import pandas as pd

    from .stages import final_attempts, fold_partial_reruns

    st = final_attempts(stages)
    st = st[st["status"].fillna("succeeded") == "succeeded"]
    st, folded = fold_partial_reruns(st, stages, tasks)
    tasks = tasks if folded is None else folded
    st = st[["run_id", "stage_id", "stage_attempt_id", "name", "num_tasks", "duration_ms",
             "submission_ms", "completion_ms"]].copy()
    st["signature"] = stage_signatures(st)
    tk = tasks.merge(st[KEY + ["stage_attempt_id"]], on=KEY + ["stage_attempt_id"])
    tk = tk[tk["duration_ms"].notna() & tk["finish_ms"].notna()]
    # the hosts a stage ran on include those where only its failed tries ran
    tried = tk
    # a failed try that Spark retried, or a speculative copy killed when the other finished, is
    # no partition's work, as in the stage models' per-task time: a real local[2,4] run whose
    # partition 2 failed once after 2 s read 819 ms of run time a task, 803 of it waiting for
    # a core (cpu), where its 8 successes ran 638 and waited 620
    if "status" in tk:
        tk = tk[tk["status"].isna() | (tk["status"].astype(str) == "SUCCESS")]
    metrics = [c for c in tk.columns if c.endswith(("_ms", "_bytes")) and c not in ("launch_ms", "finish_ms")]
    tk = _task_ratios(tk.fillna({c: 0 for c in metrics}))  # event logs may lack some metrics
    g = tk.groupby(KEY)
    s = g[["executor_run_time_ms", "executor_cpu_time_ms", "jvm_gc_time_ms", "shuffle_fetch_wait_ms",
           "shuffle_write_time_ms", "duration_ms", "executor_deserialize_time_ms",
           "memory_spilled_bytes", "disk_spilled_bytes", "input_bytes", "shuffle_read_bytes",
           "shuffle_write_bytes", "output_bytes"]].sum()
    run = s["executor_run_time_ms"].clip(lower=1)
    moved_mib = (s["input_bytes"] + s["shuffle_read_bytes"] + s["shuffle_write_bytes"]
                 + s["output_bytes"]) / 2**20
    run_ms = g["executor_run_time_ms"].mean()
    comp = {"cpu_ms": g["executor_cpu_time_ms"].mean(), "gc_ms": g["jvm_gc_time_ms"].mean(),
            "fetch_ms": g["shuffle_fetch_wait_ms"].mean(), "write_ms": g["shuffle_write_time_ms"].mean()}
    comp["wait_ms"] = (run_ms - sum(comp.values())).clip(lower=0)
    f = pd.DataFrame({
        **comp,
        "run_ms": run_ms,
        "cpu_ratio": (s["executor_cpu_time_ms"] / (run - s["shuffle_fetch_wait_ms"]
                                                   - s["shuffle_write_time_ms"]).clip(lower=1)).clip(0, 1.5),
        # per-task means in ms, not shares of the duration: a share of a fixed overhead falls
        # whenever tasks get slower, whatever the cause, and would read as a CPU effect.
        "sched_ms": g["sched_ms"].mean(),
        "gc_ratio": s["jvm_gc_time_ms"] / run,
        "fetch_ratio": s["shuffle_fetch_wait_ms"] / run,
        "write_ratio": (s["shuffle_write_time_ms"] / run).clip(0, 1.5),
        "deser_ms": g["executor_deserialize_time_ms"].mean(),
        "skew": g["duration_ms"].max() / g["duration_ms"].median().clip(lower=1),
        # log scale: CPU per byte differs by orders of magnitude between applications
        "cpu_ms_per_mib": np.log1p(s["executor_cpu_time_ms"] / (moved_mib + 1.0)),
        "spill_per_input": (s["memory_spilled_bytes"] + s["disk_spilled_bytes"])
        / (s["input_bytes"] + s["shuffle_read_bytes"]).clip(lower=1),
    })
    f = f.join(_windowed(tk))
    out = st.merge(f.reset_index(), on=KEY, how="inner")
    out[FEATURES + ["run_ms"]] = out[FEATURES + ["run_ms"]].astype(float).fillna(0.0)
    hf = host_features(out, tried, host_samples) if host_samples is not None else None
    if hf is None or hf.empty:
        out = out.assign(**{c: np.nan for c in HOST_FEATURES})
    else:
        out = out.merge(hf.astype({c: float for c in HOST_FEATURES}), on=KEY, how="left")
    return out.drop(columns=["stage_attempt_id", "completion_ms"]).reset_index(drop=True)


def _host_rates(d: dict[str, float], span_ms: float) -> dict[str, float]:
    """:data:`HOST_FEATURES` from counter deltas ``d`` over ``span_ms`` of one host."""
    total = sum(d[c] for c in _CPU_MODES)
    if not (total > 0 and span_ms > 0):
        return {}
    per_s = 1000.0 / span_ms
    return {
        "host_user_share": (d["cpu_user_ms"] + d["cpu_nice_ms"]) / total,
        "host_system_share": d["cpu_system_ms"] / total,
        "host_softirq_share": (d["cpu_softirq_ms"] + d["cpu_irq_ms"]) / total,
        "host_iowait_share": d["cpu_iowait_ms"] / total,
        "host_steal_share": d["cpu_steal_ms"] / total,
        "host_psi_cpu": d["psi_cpu_some_us"] / 1000.0 / span_ms,
        "host_psi_io": d["psi_io_some_us"] / 1000.0 / span_ms,
        "host_psi_memory": d["psi_memory_some_us"] / 1000.0 / span_ms,
        "host_disk_mib_s": (d["disk_read_bytes"] + d["disk_write_bytes"]) / 2**20 * per_s,
        "host_net_mib_s": (d["net_rx_bytes"] + d["net_tx_bytes"]) / 2**20 * per_s,
        "host_ctxt_k_s": d["context_switches"] / 1000.0 * per_s,
        "host_major_faults_s": d["major_page_faults"] * per_s,
    }


def _window_rates(series: tuple, t0: float, t1: float) -> dict[str, float]:
    """One host's rates over ``[t0, t1]``; empty when its samples cover under half the window."""
    _, tm, val, levels = series
    lo, hi = max(t0, tm[0]), min(t1, tm[-1])
    if hi - lo < 0.5 * (t1 - t0):
        return {}
    d = {c: float(np.interp(hi, tm, val[:, i]) - np.interp(lo, tm, val[:, i])) for i, c in enumerate(_COUNTERS)}
    r = _host_rates(d, hi - lo)
    if r:
        inside = (tm >= lo) & (tm <= hi)
        for i, (name, scale) in enumerate(_LEVELS.values()):
            v = levels[:, i]
            r[name] = scale * float(np.nanmean(v[inside]) if np.isfinite(v[inside]).any()
                                    else np.interp((lo + hi) / 2, tm, v))
    return r


def host_features(stages: pd.DataFrame, tasks: pd.DataFrame, samples: pd.DataFrame) -> pd.DataFrame:
    """:data:`HOST_FEATURES` of each stage (``KEY`` + features), over its submission-completion
    window, from the cumulative counters of ``samples`` (the ``host_samples`` table) interpolated
    at the window's ends. Each host counts once (its executors sample the same counters); the
    stage's hosts are those of its tasks' executors, or the driver's in local mode."""
    import pandas as pd

    if samples is None or samples.empty:
        return pd.DataFrame(columns=KEY + list(HOST_FEATURES))
    smp = samples.dropna(subset=["time_ms"]).sort_values("time_ms")
    series = {}
    for (rid, eid), g in smp.groupby(["run_id", "executor_id"], sort=False):
        if len(g) >= 2:
            series[(rid, eid)] = (g["host"].iloc[0], g["time_ms"].to_numpy(float),
                                  g[_COUNTERS].astype(float).to_numpy(), g[list(_LEVELS)].astype(float).to_numpy())
    execs = tasks.groupby(KEY)["executor_id"].unique() if not tasks.empty else pd.Series(dtype=object)
    rows = []
    for st in stages[KEY + ["submission_ms", "completion_ms"]].itertuples(index=False):
        rid, sid, t0, t1 = st
        if not (np.isfinite(t0) and np.isfinite(t1)) or t1 <= t0:
            continue
        hosts: dict[Any, dict[str, float]] = {}
        # the driver's samples stand in only for a local-mode executor, which lives in its JVM
        for ids in (list(execs.get((rid, sid), [])), ["driver"]):
            for eid in ids:
                got = series.get((rid, eid))
                if got is None or got[0] in hosts:
                    continue
                r = _window_rates(got, t0, t1)
                if r:
                    hosts[got[0]] = r
            if hosts:
                break
        if hosts:
            mean = pd.DataFrame(list(hosts.values())).mean()
            rows.append({"run_id": rid, "stage_id": sid, **mean.to_dict()})
    return pd.DataFrame(rows, columns=KEY + list(HOST_FEATURES))


#: Call sites of actions called through Py4J: Spark names them either way in different runs.
def stage_signatures(stages: pd.DataFrame) -> pd.Series:
    """The same stage across runs of a job: call site, its occurrence number, and task count.

    Stage ids restart in every application and follow the DAG, so the k-th stage with a given
    call site and task count is the same stage in two runs of a deterministic job. Folders and
    Py4J's unstable call sites (``count at NativeMethodAccessorImpl.java:0`` in one run,
    ``count at <unknown>:0`` in the next) are normalised by :func:`features.stages.call_site`.
    """
    from .stages import call_site

    st = stages.sort_values(KEY).assign(_site=lambda d: d["name"].map(call_site))
    occ = st.groupby(["run_id", "_site", "num_tasks"]).cumcount()
    sig = st["_site"] + "|" + st["num_tasks"].astype(str) + "|" + occ.astype(str)
    return sig.reindex(stages.index)


def interference_labels(runs: pd.DataFrame) -> pd.Series:
    """``run_id -> 'none' | '<kind>:<intensity>' | None`` from the runs' recorded properties."""
    import pandas as pd

    from .runs import _parse_properties

    def one(props: Any) -> str | None:
        return (_parse_properties(props) or {}).get(LABEL_KEY)
    return pd.Series([one(p) for p in runs["properties_json"]], index=runs["run_id"].values)


# ---- clean baseline and labels ----------------------------------------------------------
def clean_baseline(feats: pd.DataFrame) -> pd.DataFrame:
    """Per signature: ``expected_ms`` (median duration) and the median of every feature."""
    g = feats.groupby("signature")
    extra = [c for c in ("run_ms", *HOST_FEATURES) if c in feats]
    return g[FEATURES + extra + ["duration_ms"]].median().rename(columns={"duration_ms": "expected_ms"})


def with_baseline(feats: pd.DataFrame, clean_run_ids: list[str]) -> pd.DataFrame:
    """Add ``expected_ms``, ``degradation`` and ``base_<feature>`` columns to stage features.

    Clean runs are compared with the *other* clean runs (leave one out), so their own duration
    never sets their expectation: a job's only clean run has none, and gets NaN (compared with
    itself, its D of 0 was a training sample the run never gave). Stages without a clean
    counterpart get NaN.
    """
    import pandas as pd

    clean = feats[feats["run_id"].isin(clean_run_ids)]
    parts = []
    for rid, rows in feats.groupby("run_id", sort=False):
        ref = clean[clean["run_id"] != rid]
        base = clean_baseline(ref) if not ref.empty else pd.DataFrame(columns=FEATURES + ["run_ms", "expected_ms"], dtype=float)
        b = base.reindex(rows["signature"].values)
        b.columns = [f"base_{c}" if c != "expected_ms" else c for c in b.columns]
        parts.append(pd.concat([rows.reset_index(drop=True), b.reset_index(drop=True)], axis=1))
    # one part is returned as it came, in as many blocks as columns were added to the
    # features; the copy consolidates them (pandas warned "highly fragmented" at this insert)
    out = pd.concat(parts, ignore_index=True).copy()
    out["degradation"] = out["duration_ms"] / out["expected_ms"] - 1.0
    return out


# ---- a run's host evidence against its clean baseline --------------------------------------
_MEM_IDX = HOST_FEATURES.index("host_mem_available_gib")
_USER_IDX = HOST_FEATURES.index("host_user_share")  # CPU shares exist wherever /proc/stat does


def stage_weights(rows: pd.DataFrame) -> np.ndarray:
    """Each stage's weight in its run's figures: its expected time, else its actual time (at
    least 1 ms), so that a run's mean is its stages' time-weighted mean."""
    w = rows["expected_ms"].fillna(rows["duration_ms"]) if "expected_ms" in rows else rows["duration_ms"]
    return np.clip(w.to_numpy(float), 1, None)


def host_evidence(rows: pd.DataFrame) -> np.ndarray | None:
    """A run's host counters against their clean baseline: per :data:`HOST_FEATURES`, the
    expected-time-weighted mean over its stages of ``log1p(x) - log1p(baseline)``, except for
    available memory, where it is the GiB that something else took (``baseline - x``): the
    footprint of a memory-hungry neighbour is its size, not its ratio to the host's RAM.

    A counter this host does not have (no PSI in the kernel, say) counts as unchanged. None when
    no stage has host CPU shares for itself and its baseline."""
    base = [f"base_{c}" for c in HOST_FEATURES]
    if not set(base) <= set(rows.columns):
        return None
    x = rows[list(HOST_FEATURES)].to_numpy(float)
    x0 = rows[base].to_numpy(float)
    ok = np.isfinite(x[:, _USER_IDX]) & np.isfinite(x0[:, _USER_IDX])
    if not ok.any():
        return None
    z = np.log1p(np.clip(x[ok], 0, None)) - np.log1p(np.clip(x0[ok], 0, None))
    z[:, _MEM_IDX] = x0[ok][:, _MEM_IDX] - x[ok][:, _MEM_IDX]
    return np.average(np.nan_to_num(z, nan=0.0, posinf=0.0, neginf=0.0), axis=0, weights=stage_weights(rows)[ok])


#: :func:`host_footprint`'s keys -> (host feature, sign): the change that names each neighbour
FOOTPRINT = {"memory_held_gib": ("host_mem_available_gib", -1.0), "network_mib_s": ("host_net_mib_s", 1.0),
             "disk_mib_s": ("host_disk_mib_s", 1.0), "io_stall_share": ("host_psi_io", 1.0)}


def host_footprint(rows: pd.DataFrame) -> dict[str, float] | None:
    """The footprints behind the culprit, in their units, for one run: the expected-time-weighted
    mean change over the clean baseline of the memory held by something else (GiB), network and
    disk traffic (MiB/s) and the share of time with tasks stalled on I/O. None without host
    samples; a counter the host lacks is left out."""
    if not {f"base_{f}" for f, _ in FOOTPRINT.values()} <= set(rows.columns):
        return None
    w = stage_weights(rows)
    out = {}
    for key, (f, sign) in FOOTPRINT.items():
        dv = sign * (rows[f].to_numpy(float) - rows[f"base_{f}"].to_numpy(float))
        ok = np.isfinite(dv)
        if ok.any():
            out[key] = float(np.average(dv[ok], weights=w[ok]))
    return out or None
