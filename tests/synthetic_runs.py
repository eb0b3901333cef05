"""Synthetic Spark runs with known schedules: an independent FIFO list scheduler writes the
stage and task rows a listener would have recorded, so that a replay or a stage model can be
checked against the true runtime of the same job on another cluster or input size.

A stage is submitted ``gap_ms`` after its parents end (``head_ms`` after the start for a stage
without parents); tasks go to free slots in Spark's FIFO order (job id, then stage id)."""
from __future__ import annotations

import heapq
import json
import math

import pandas as pd

MB = 2**20
T0 = 1_000_000_000_000


def schedule(stages: list[dict], slots: int, head_ms: int = 1000, gap_ms: int = 100, t0: int = T0):
    """Per stage its submission and completion (ms), and every task's launch and finish."""
    by = {s["id"]: s for s in stages}
    done: dict[int, int] = {}
    submit: dict[int, int] = {}
    pending = set(by)
    free = list(range(slots))
    events: list = []  # (time, kind: 0 a task ends, 1 a stage is submitted, payload)
    ready: list = []  # (job id, stage id)
    nxt = dict.fromkeys(by, 0)
    left = {s: len(by[s]["tasks"]) for s in by}
    tasks: list[dict] = []

    def submit_ready() -> None:
        for sid in sorted(pending):
            s = by[sid]
            if all(p in done for p in s["parents"]):
                at = max([done[p] for p in s["parents"]], default=t0 + head_ms - gap_ms) + gap_ms
                pending.discard(sid)
                heapq.heappush(events, (at, 1, sid))

    submit_ready()
    while events:
        now, kind, p = heapq.heappop(events)
        if kind == 1:
            submit[p] = now
            if left[p] == 0:
                done[p] = now
                submit_ready()
            else:
                heapq.heappush(ready, (by[p]["job_id"], p))
        else:
            sid, slot = p
            free.append(slot)
            left[sid] -= 1
            if left[sid] == 0:
                done[sid] = now
                submit_ready()
        while free and ready:
            _, sid = ready[0]
            k = nxt[sid]
            d = by[sid]["tasks"][k]
            slot = free.pop(0)
            tasks.append({"stage_id": sid, "index": k, "launch": now, "finish": now + d, "slot": slot})
            heapq.heappush(events, (now + d, 0, (sid, slot)))
            nxt[sid] += 1
            if nxt[sid] == len(by[sid]["tasks"]):
                heapq.heappop(ready)
    return submit, done, tasks


def make_run(run_id: str, job: str, stages: list[dict], E: int, C: int, input_bytes: float,
             head_ms: int = 1000, gap_ms: int = 100, tail_ms: int = 500, t0: int = T0):
    """(run row, stage rows, task rows) of one run of ``stages`` on E executors of C cores."""
    slots = E * C
    submit, done, tks = schedule(stages, slots, head_ms, gap_ms, t0)
    end = max(done.values()) + tail_ms
    props = {"spark.executor.instances": str(E), "spark.executor.cores": str(C), "spark.master": "spark://h:7077"}
    run = {"run_id": run_id, "app_id": run_id, "job": job, "app_name": job, "status": "succeeded",
           "master": "spark://h:7077", "start_ms": t0, "end_ms": end, "wall_ms": end - t0,
           "executors_requested": E, "executors_max": E, "executors_mean": float(E), "executor_cores": C,
           "executor_memory_mb": 4096, "task_slots": slots, "input_bytes": int(input_bytes),
           "input_bytes_source": "declared", "properties_json": json.dumps(props), "num_tasks": len(tks),
           "num_stages": len(stages), "source": "listener", "num_jobs": 1}
    srows, trows = [], []
    for s in stages:
        sid, n = s["id"], len(s["tasks"])
        ib, sr, sw = s.get("input_bytes", 0), s.get("shuffle_read_bytes", 0), s.get("shuffle_write_bytes", 0)
        srows.append({"run_id": run_id, "job_id": s["job_id"], "stage_id": sid, "stage_attempt_id": 0,
                      "name": s["name"], "num_tasks": n, "parent_stage_ids_json": json.dumps(s["parents"]),
                      "submission_ms": submit[sid], "completion_ms": done[sid],
                      "duration_ms": done[sid] - submit[sid], "status": "succeeded", "num_task_rows": n,
                      "num_failed_tasks": 0, "executor_run_time_ms": int(sum(s["tasks"])),
                      "input_bytes": int(ib), "shuffle_read_bytes": int(sr), "shuffle_write_bytes": int(sw),
                      "output_bytes": 0, "input_records": int(ib // 100), "shuffle_read_records": int(sr // 100),
                      "executor_deserialize_time_ms": 0, "result_serialization_time_ms": 0})
        for t in (t for t in tks if t["stage_id"] == sid):
            trows.append({"run_id": run_id, "stage_id": sid, "stage_attempt_id": 0, "task_id": len(trows),
                          "task_index": t["index"], "attempt": 0, "executor_id": str(t["slot"] // C),
                          "host": "h", "launch_ms": t["launch"], "finish_ms": t["finish"],
                          "duration_ms": t["finish"] - t["launch"], "status": "SUCCESS", "speculative": False,
                          "executor_run_time_ms": t["finish"] - t["launch"],
                          "input_bytes": int(ib / max(n, 1)), "shuffle_read_bytes": int(sr / max(n, 1))})
    return run, srows, trows


def tables(runs: list) -> dict[str, pd.DataFrame]:
    out: dict[str, list] = {"runs": [], "stages": [], "tasks": []}
    for r, s, t in runs:
        out["runs"].append(r)
        out["stages"] += s
        out["tasks"] += t
    return {k: pd.DataFrame(v) for k, v in out.items()}


def spark_splits(input_bytes: float, parallelism: int, max_partition_bytes: int = 128 * MB) -> int:
    """Spark's file-split count: splits of min(128 MiB, max(4 MiB, bytes / parallelism))."""
    split = min(max_partition_bytes, max(4 * MB, input_bytes / parallelism))
    return max(1, math.ceil(input_bytes / split - 1e-9))


def wordcount_stages(S: float, E: int, C: int, partitions: int = 200) -> list[dict]:
    """A word count of S bytes: map tasks of 100 ms + 10 ms per MiB over Spark's file splits for
    E x C cores, a 200-partition reduce, and a one-task collect."""
    n0 = spark_splits(S, E * C)
    shuffle = 0.1 * S
    return [{"id": 0, "job_id": 0, "name": "map at wc.py:10", "parents": [],
             "tasks": [int(100 + 10 * S / n0 / MB)] * n0, "input_bytes": S, "shuffle_write_bytes": shuffle},
            {"id": 1, "job_id": 0, "name": "reduce at wc.py:12", "parents": [0],
             "tasks": [int(50 + 20 * shuffle / partitions / MB)] * partitions,
             "shuffle_read_bytes": shuffle, "shuffle_write_bytes": 1000},
            {"id": 2, "job_id": 1, "name": "collect at wc.py:14", "parents": [1], "tasks": [200],
             "shuffle_read_bytes": 1000}]


def wordcount_truth_s(S: float, E: int, C: int) -> float:
    return make_run("truth", "wc", wordcount_stages(S, E, C), E, C, S)[0]["wall_ms"] / 1000


def wordcount_history(sizes, executors, C: int = 4) -> dict[str, pd.DataFrame]:
    """Store-schema tables of one run per size x executor count."""
    runs = [make_run(f"run{i:03d}", "wc", wordcount_stages(S, E, C), E, C, S, t0=T0 + i * 10**7)
            for i, (S, E) in enumerate((S, E) for S in sizes for E in executors)]
    return tables(runs)
