"""More behaviours of the stage features (features/stages.py) that a mutation audit found no
test pinning: the folding of a stage rerun in part, the task-count rules at another size, the
computed parents of a stage signature and Spark's packing of unequal shuffle partitions. Each
test here failed on a mutant of the module that the rest of the suite (its tests that start no
JVM) let pass. Known inputs, values worked out by hand; no JVM."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sparkpredict.features import stages as F

MiB = 2**20
NAN = float("nan")


# ---- fold_partial_reruns: a reduce stage rerun in part, made whole ---------------------------
def _stage(stage_id, attempt, status, num_tasks, rows, read, run_ms, sub, comp, dur):
    return {"run_id": "r", "stage_id": stage_id, "stage_attempt_id": attempt, "status": status, "num_tasks": num_tasks,
                "num_task_rows": rows, "shuffle_read_bytes": read, "executor_run_time_ms": run_ms,
                "submission_ms": sub, "completion_ms": comp, "duration_ms": dur}


def _rerun_stages(first_attempt):
    """Stage 0 ran once (its attempt id not recorded); stage 1 failed in attempt
    ``first_attempt`` (0 or None: not recorded) after 6 task rows (5 succeeded), and its
    attempt 1 ran the 3 partitions left. Attempt 0 has no duration, only its times."""
    return pd.DataFrame([
        _stage(0, None, "succeeded", 8, 8, 0.0, 80.0, 0.0, 90.0, 90.0),
        _stage(1, first_attempt, "failed", 8, 6, 600.0, 60.0, 100.0, 550.0, NAN),
        _stage(1, 1, "succeeded", 3, 3, 300.0, 30.0, 600.0, 1000.0, 400.0),
    ])


@pytest.mark.parametrize("first_attempt", [0, None])
def test_a_stage_rerun_in_part_counts_its_largest_attempt_and_adds_the_failed_attempts_sums(first_attempt):
    stages = _rerun_stages(first_attempt)
    st = F.final_attempts(stages)
    assert st.set_index("stage_id")["stage_attempt_id"].to_dict() == {0: 0, 1: 1}
    out, tasks = F.fold_partial_reruns(st, stages, None)
    assert tasks is None
    got = out.set_index("stage_id")
    # without task rows the failed attempt's stage sums count whole (its failed task's too)
    assert got.loc[1, "num_tasks"] == 8
    assert got.loc[1, "shuffle_read_bytes"] == 900.0
    assert got.loc[1, "executor_run_time_ms"] == 90.0
    assert got.loc[1, "num_task_rows"] == 9
    # its time: its own 400 ms and the failed attempt's 450 (completion - submission)
    assert got.loc[1, "duration_ms"] == 850.0
    # a stage whose attempt id was not recorded is attempt 0: no rerun, left as it was
    assert got.loc[0].to_dict() == pytest.approx({**st.set_index("stage_id").loc[0].to_dict()}, nan_ok=True)
    assert got.loc[0, "num_tasks"] == 8 and got.loc[0, "duration_ms"] == 90.0


@pytest.mark.parametrize("dtype", ["float64", "Int64"])  # as Parquet's nullable ints read
def test_a_stage_with_no_attempt_id_alone_is_one_attempt_not_a_rerun(dtype):
    stages = pd.DataFrame([_stage(3, None, "succeeded", 4, 4, 40.0, 8.0, 0.0, 50.0, 50.0)])
    stages["stage_attempt_id"] = stages["stage_attempt_id"].astype(dtype)
    st = F.final_attempts(stages)
    assert st["stage_attempt_id"].tolist() == [0]
    out, _ = F.fold_partial_reruns(st, stages, None)
    assert out["num_tasks"].tolist() == [4] and out["shuffle_read_bytes"].tolist() == [40.0]
    assert out["duration_ms"].tolist() == [50.0]


def _task(tid, attempt, status, executor, launch, finish, read, run_ms=10.0):
    return {"run_id": "r", "stage_id": 1, "stage_attempt_id": attempt, "task_id": tid, "status": status,
                "executor_id": executor, "launch_ms": launch, "finish_ms": finish, "shuffle_read_bytes": read,
                "executor_run_time_ms": run_ms, "duration_ms": run_ms}


@pytest.mark.parametrize("first_attempt", [0, None])
def test_a_rerun_takes_in_the_failed_attempts_succeeded_tasks_that_fill_the_room_alive_executors_first(
        first_attempt):
    # 6 tasks of attempt 0 succeeded, but attempt 1 ran 3 of 8 partitions: room for 5. Executor
    # "b" launched nothing after attempt 1 was submitted (at 600): lost, its outputs are those
    # run again. Executor "a"'s three come first, then "b"'s by finish time: the last is out.
    stages = _rerun_stages(first_attempt)
    rows = [_task(1, first_attempt, "SUCCESS", "a", 100, 200, 1.0),
            _task(2, first_attempt, "SUCCESS", "a", 200, 300, 2.0),
            _task(3, first_attempt, "SUCCESS", "a", 300, 400, 4.0),
            _task(4, first_attempt, "SUCCESS", "b", 100, 150, 8.0),
            _task(5, first_attempt, "SUCCESS", "b", 150, 250, 16.0),
            _task(6, first_attempt, "SUCCESS", "b", 250, 350, 32.0),
            _task(7, first_attempt, "FAILED", "a", 400, 500, 64.0),
            _task(8, 1, "SUCCESS", "a", 610, 700, 100.0),
            _task(9, 1, "SUCCESS", "a", 700, 800, 200.0),
            _task(10, 1, "SUCCESS", "a", 800, 900, 400.0)]
    tasks = pd.DataFrame(rows)
    st = F.final_attempts(stages)
    out, tk = F.fold_partial_reruns(st, stages, tasks)
    got = out.set_index("stage_id").loc[1]
    # the stage row's own sums (300) and the 5 tasks taken in: 1 + 2 + 4 + 8 + 16
    assert got["shuffle_read_bytes"] == 300.0 + 31.0
    assert got["executor_run_time_ms"] == 30.0 + 50.0
    assert got["num_task_rows"] == 3 + 5
    assert got["num_tasks"] == 8
    assert got["duration_ms"] == 850.0
    # the tasks taken in count as the succeeded attempt's; the rest keep their attempt (0)
    moved = tk.set_index("task_id")["stage_attempt_id"].to_dict()
    assert moved == {1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 6: 0, 7: 0, 8: 1, 9: 1, 10: 1}


def test_a_stage_rerun_whole_or_a_map_stage_rerun_after_it_succeeded_is_not_folded():
    # attempt 1 ran all 8 partitions again: its sums are the stage's
    whole = pd.DataFrame([_stage(1, 0, "failed", 8, 6, 600.0, 60.0, 100.0, 550.0, 450.0),
                          _stage(1, 1, "succeeded", 8, 8, 800.0, 80.0, 600.0, 1000.0, 400.0)])
    st = F.final_attempts(whole)
    out, _ = F.fold_partial_reruns(st, whole, None)
    assert out["num_tasks"].tolist() == [8] and out["shuffle_read_bytes"].tolist() == [800.0]
    assert out["duration_ms"].tolist() == [400.0]
    # a map stage succeeded (8 tasks), then ran 3 lost outputs again: the first attempt stands
    lost = pd.DataFrame([_stage(0, 0, "succeeded", 8, 8, 0.0, 80.0, 0.0, 90.0, 90.0),
                         _stage(0, 1, "succeeded", 3, 3, 0.0, 30.0, 600.0, 700.0, 100.0)])
    st = F.final_attempts(lost)
    assert st["stage_attempt_id"].tolist() == [0]
    out, _ = F.fold_partial_reruns(st, lost, None)
    assert out["executor_run_time_ms"].tolist() == [80.0] and out["duration_ms"].tolist() == [90.0]


def test_a_rerun_whose_own_sums_and_duration_are_missing_reads_them_as_none_and_its_times():
    stages = _rerun_stages(0)
    stages.loc[2, ["shuffle_read_bytes", "duration_ms", "num_task_rows"]] = NAN
    # the failed attempt's task rows all failed: it adds no task, no bytes, only its time
    tasks = pd.DataFrame([_task(7, 0, "FAILED", "a", 400, 500, 64.0),
                          _task(8, 1, "SUCCESS", "a", 610, 700, 100.0)])
    out, _ = F.fold_partial_reruns(F.final_attempts(stages), stages, tasks)
    got = out.set_index("stage_id").loc[1]
    assert got["shuffle_read_bytes"] == 0.0
    assert got["num_task_rows"] == 0.0
    assert got["executor_run_time_ms"] == 30.0
    # 1000 - 600 of its own, 550 - 100 of the failed attempt's
    assert got["duration_ms"] == 400.0 + 450.0
    assert got["num_tasks"] == 8


def test_nothing_to_fold_without_stage_rows_a_status_or_a_task_count():
    stages = _rerun_stages(0)
    st = F.final_attempts(stages)
    for cut in (stages.drop(columns="status"), stages.drop(columns="num_tasks")):
        out, tk = F.fold_partial_reruns(st, cut, None)
        assert out is st and tk is None
    out, tk = F.fold_partial_reruns(st.iloc[0:0], stages, None)
    assert out.empty and tk is None


# ---- _computed_parents: a skipped parent stands for the stage that wrote what the child read -
def _g(rows):
    return pd.DataFrame([{"stage_id": s, "shuffle_write_bytes": w, "shuffle_read_bytes": r, "submission_ms": sub,
                              "completion_ms": comp, "parent_stage_ids_json": json_parents}
                         for s, w, r, sub, comp, json_parents in rows])


def test_skipped_parents_stand_for_the_latest_stages_that_wrote_exactly_the_bytes_read():
    g = _g([(0, 100.0, 0.0, 0.0, 10.0, "[]"),
            (1, 100.0, 0.0, 11.0, 20.0, "[]"),
            (2, 50.0, 0.0, 21.0, 30.0, "[]"),
            # one skipped parent: the latest writer of its 100 bytes done before it started
            (5, 0.0, 100.0, 40.0, 50.0, "[4]"),
            # two skipped parents (a join's sides): the latest pair of writers of 150 bytes
            (6, 0.0, 150.0, 40.0, 50.0, "[3, 7]"),
            # one recorded parent (50 bytes) and one skipped: the rest, 100 bytes
            (8, 0.0, 150.0, 40.0, 50.0, "[2, 9]"),
            # submitted when stage 1 completed (at 20): stage 1 counts as done before it
            (10, 0.0, 100.0, 20.0, 25.0, "[10, 11]"),
            # submitted before any 100-byte writer completed: none found
            (12, 0.0, 100.0, 9.0, 25.0, "[13]"),
            # nothing read, or three skipped parents: none looked for
            (14, 0.0, 0.0, 40.0, 50.0, "[15]"),
            (16, 0.0, 250.0, 40.0, 50.0, "[17, 18, 19]")])
    ids = g["stage_id"].tolist()
    assert F._computed_parents(g, ids) == {0: [], 1: [], 2: [], 5: [1], 6: [2, 1], 8: [2, 1], 10: [1],
                                           12: [], 14: [], 16: []}


def test_a_skipped_parent_needs_the_exact_bytes_and_no_stage_stands_for_itself():
    g = _g([(0, 100.0, 0.0, 0.0, 10.0, "[]"),
            (1, 0.0, 101.0, 20.0, 30.0, "[9]"),  # 101 bytes: nobody wrote them
            (2, 100.0, 100.0, 20.0, 30.0, "[2, 8]")])  # itself listed; it wrote 100 too, after
    assert F._computed_parents(g, [0, 1, 2]) == {0: [], 1: [], 2: [0]}
    # no parents column (an old store): no parents
    assert F._computed_parents(g.drop(columns="parent_stage_ids_json"), [0, 1, 2]) == {0: [], 1: [], 2: []}


def test_writers_are_stages_that_wrote_bytes_and_a_join_s_sides_are_two_of_them():
    g = _g([(0, 0.0, 0.0, 0.0, 10.0, "[]"),       # wrote nothing
            (1, 1.0, 0.0, 0.0, 10.0, "[]"),       # wrote one byte
            (2, 50.0, 0.0, 0.0, 10.0, "[]"),
            (3, 75.0, 0.0, 0.0, 10.0, "[]"),
            (4, 0.0, 1.0, 20.0, 30.0, "[9]"),     # read that one byte
            # its recorded parent wrote all it read: the skipped one wrote nothing, not stage 0
            (5, 0.0, 50.0, 20.0, 30.0, "[2, 9]"),
            # no parent skipped: none looked for, though stages 2 and 3 wrote its 125 bytes
            (6, 0.0, 125.0, 20.0, 30.0, "[]"),
            # two skipped parents of 150 bytes: not stage 3 twice
            (7, 0.0, 150.0, 20.0, 30.0, "[8, 9]")])
    assert F._computed_parents(g, list(range(8))) == {0: [], 1: [], 2: [], 3: [], 4: [1], 5: [2], 6: [],
                                                      7: []}
    # without the columns (an old store): nobody wrote, nobody completed
    for cut in ("shuffle_write_bytes", "completion_ms"):
        assert F._computed_parents(g.drop(columns=cut), list(range(8)))[4] == []
    # a write not recorded is none
    nan = g.assign(shuffle_write_bytes=g["shuffle_write_bytes"].where(g["stage_id"] != 1))
    assert F._computed_parents(nan, list(range(8)))[4] == []


def test_a_join_s_sides_are_looked_for_among_the_64_latest_writers():
    # 65 writers, the latest first: 1 to 64 bytes, then one of a million; a join read the latest
    # and the 65th: too far back
    rows = [(k, float(k + 1), 0.0, 0.0, 1000.0 - k, "[]") for k in range(64)]
    rows += [(64, 1e6, 0.0, 0.0, 900.0, "[]"), (65, 0.0, 1e6 + 1, 2000.0, 2100.0, "[98, 99]"),
             (66, 0.0, 1e6 + 2, 2000.0, 2100.0, "[98, 99]")]
    g = _g(rows)
    got = F._computed_parents(g, g["stage_id"].tolist())
    assert got[65] == [] and got[66] == []
    # among the 64: the latest of 64 bytes and the next of 63
    g.loc[64, "completion_ms"] = 1500.0
    got = F._computed_parents(g, g["stage_id"].tolist())
    assert got[65] == [64, 0] and got[66] == [64, 1]


# ---- hadoop_split_tasks: FileInputFormat.getSplits over files of equal size -------------------
def _spark_hadoop_splits(files: int, bytes_in: int, min_partitions: int, block: int) -> int:
    """``FileInputFormat.getSplits`` written out: the goal ``total / numSplits`` (0 read as 1),
    a split of ``max(1, min(goal, blockSize))``, cut from each file while what is left is over
    1.1 splits, the rest (if any) one split more; an empty file is one split of its own."""
    size = bytes_in // files
    goal = (size * files) // max(min_partitions, 1)
    split = max(1, min(goal, block))
    n = 0
    for _ in range(files):
        left = size
        while left / split > 1.1:
            n, left = n + 1, left - split
        n += 1 if left or size == 0 else 0
    return n


@pytest.mark.parametrize("files", [1, 2, 3, 7, 40])
def test_hadoop_splits_follow_file_input_format(files):
    block = 32 * MiB
    for size_mib in (0.5, 1, 10, 32, 34, 35.2, 35.3, 64, 70, 100, 300, 1000):
        for min_partitions in (1, 2):
            b = int(size_mib * MiB) * files
            want = _spark_hadoop_splits(files, b, min_partitions, block)
            assert F.hadoop_split_tasks(files, b, min_partitions, block) == want, (size_mib, min_partitions)
    # numbers of files at once, as _files_for asks
    got = F.hadoop_split_tasks(np.array([1.0, 2.0, 3.0]), 100 * MiB, 2, block)
    assert got.tolist() == [4, 4, 3] and got.dtype.kind == "i"


def test_hadoop_splits_of_nothing_or_no_min_partitions_are_one_a_file():
    assert F.hadoop_split_tasks(1, 0, 2) == 1
    assert F.hadoop_split_tasks(5, 0, 2) == 5
    assert F.hadoop_split_tasks(0, 10 * MiB, 2) == 2  # no files recorded: one, of 2 splits
    # minPartitions 0 (a parallelism of 0) is read as 1: one split of up to a block a file
    assert F.hadoop_split_tasks(1, 32 * MiB, 0) == 1
    assert F.hadoop_split_tasks(1, 33 * MiB, 0) == 1  # under 1.1 blocks
    assert F.hadoop_split_tasks(1, 36 * MiB, 0) == 2


# ---- _spark_packing: coalescing of unequal shuffle partitions ----------------------------------
def _packing_one_at_a_time(parts, target, min_bytes):
    """The packing :func:`F._spark_packing` documents, one partition at a time: a group takes the
    next partition while it fits the target; one under the minimum takes it all the same, or
    joins the group before when that one is smaller than the partition (and not empty); a last
    group under the minimum joins the one before. Empty groups are no task; no group is one."""
    closed: list[float] = []
    cur = None
    for p in parts:
        if cur is None or cur + p <= target:
            cur = (cur or 0.0) + p
        elif cur >= min_bytes:
            closed, cur = [*closed, cur], p
        elif closed and 0 < closed[-1] < p:
            closed[-1], cur = closed[-1] + cur, p
        else:
            cur += p
    n = sum(1 for c in closed if c > 0)
    if cur is not None and not (cur < min_bytes and closed and closed[-1] > 0):
        n += cur > 0 or n == 0
    return max(n, 1)


def test_spark_packing_is_the_one_at_a_time_packing_of_any_partitions():
    rng = np.random.default_rng(7)
    for _ in range(400):
        n = int(rng.integers(1, 30))
        # sizes of a few values, zeros among them (empty partitions), so runs form
        parts = rng.choice([0.0, 0.1, 0.3, 0.45, 1.0, 2.5], size=n, p=[0.2, 0.2, 0.2, 0.2, 0.1, 0.1]).tolist()
        target, lo = float(rng.choice([0.5, 1.0, 2.0])), float(rng.choice([0.0, 0.2, 0.6]))
        runs: list[tuple[int, float]] = []
        for p in parts:
            runs = runs[:-1] + [(runs[-1][0] + 1, p)] if runs and runs[-1][1] == p else [*runs, (1, p)]
        want = _packing_one_at_a_time(parts, target, lo)
        assert F._spark_packing(runs, target, lo) == want, (parts, target, lo)
        assert F._spark_packing([(1, p) for p in parts], target, lo) == want, (parts, target, lo)


def test_spark_packing_edges_worked_out_by_hand():
    # a big partition, then an empty one: one group (the empty one is no task)
    assert F._spark_packing([(1, 100.0), (1, 0.0)], 50.0, 0.0) == 1
    # too small (0.3 < 0.5) when 2.0 comes: it joins the group before (1.0 < 2.0): 1.3 and 2.0
    assert F._spark_packing([(1, 1.0), (1, 0.3), (1, 2.0)], 1.0, 0.5) == 2
    # ... not where the group before is as large as the partition: 1.0, then 0.3 + 1.0
    assert F._spark_packing([(1, 1.0), (1, 0.3), (1, 1.0)], 1.0, 0.5) == 2
    assert F._spark_packing([(1, 1.0), (1, 0.3), (1, 1.0), (1, 1.0)], 1.0, 0.5) == 3
    # joined to the group before, a partition starts a group of its own, which takes the next
    # ones: 0.55 | 0.49 (small) joins it when 0.6 comes | 0.6 + 0.3 | 0.3 joins the one before
    assert F._spark_packing([(1, 0.55), (1, 0.49), (1, 0.6), (2, 0.3)], 1.0, 0.5) == 2
    # not joined to a group as large as the partition: 0.6 | 0.45 + 0.6 | 0.3 + 0.3
    assert F._spark_packing([(1, 0.6), (1, 0.45), (1, 0.6), (2, 0.3)], 1.0, 0.5) == 3
    # a group of exactly 1 byte is a task
    assert F._spark_packing([(1, 1.0), (1, 1.0)], 1.0, 0.0) == 2
    assert F._spark_packing([(3, 0.0)], 1.0, 0.5) == 1


# ---- _files_for: the files of equal size a recorded task count implies -----------------------
def test_files_for_one_file_where_one_gives_the_count_else_the_nearest_count_from_above_too():
    # one file of 59 MiB on 2 cores is 2 SQL tasks
    assert F._files_for("sql", 2, 59 * MiB, 2.0, 128 * MiB, 4 * MiB, 0.0) == 1.0
    # at most 5 partitions (spark.sql.files.maxPartitionNum) no file count gives 8 tasks: the
    # nearest, 5, first comes from 117 files (2 tasks from 1, 3 from 3, 4 from 82)
    n = F.file_scan_tasks(np.arange(1.0, 400.0), 59 * MiB, 2, 128 * MiB, 4 * MiB, 5.0)
    assert n.max() == 5 and int(np.argmax(n == 5)) + 1 == 117
    assert F._files_for("sql", 8, 59 * MiB, 2.0, 128 * MiB, 4 * MiB, 5.0) == 117.0


def test_files_for_is_the_middle_of_the_first_run_of_file_counts_that_give_the_count():
    # 300 MiB by Hadoop (32 MiB blocks): 3 and 4 files give 12 splits, 5 does not, 6 and 12 do
    counts = F.hadoop_split_tasks(np.arange(1.0, 13.0), 300 * MiB, 2.0, 32 * MiB)
    assert (np.flatnonzero(counts == 12) + 1).tolist() == [3, 4, 6, 12]
    assert F._files_for("hadoop", 12, 300 * MiB, 2.0, 32 * MiB) == 3.5
    # 300 MiB by SQL on 2 cores: 53 to 55 files give 5 tasks, 56 does not, 57 on do
    counts = F.file_scan_tasks(np.arange(1.0, 60.0), 300 * MiB, 2.0, 128 * MiB, 4 * MiB, 0.0)
    assert (np.flatnonzero(counts == 5) + 1).tolist()[:4] == [53, 54, 55, 57]
    assert F._files_for("sql", 5, 300 * MiB, 2.0, 128 * MiB, 4 * MiB, 0.0) == 54.0


# ---- _scan_rules / predict_num_tasks ---------------------------------------------------------
def test_a_hadoop_read_no_block_size_explains_has_no_split_rule_and_keeps_its_count():
    # 100 MiB by sc.textFile on 2 cores is 2 splits at least, whatever the files and the block:
    # a recorded single task is no file split's; the recorded count stands
    ref = pd.Series({"bytes_in": 100.0 * MiB, "num_tasks": 1, "rdd_names_json": '["HadoopRDD", "MapPartitionsRDD"]',
                     "default_parallelism": 2.0, "max_partition_bytes": 128.0 * MiB, "is_input_stage": True,
                     "parallelism_explicit": 0.0})
    assert F._scan_rules(ref) == []
    assert F.predict_num_tasks(pd.DataFrame([ref]), ref, 100.0 * MiB) == 1
    # nothing read, or no task recorded: no split rule at all
    assert F._scan_rules(ref.copy().replace({100.0 * MiB: 0.0})) == []
    assert F._scan_rules(pd.Series({**ref.to_dict(), "num_tasks": 0, "rdd_names_json": "[]"})) == []
    empty = pd.Series({**ref.to_dict(), "bytes_in": 0.0, "rdd_names_json": '["FileScanRDD"]'})
    # ... the former rule then (no run to calibrate it): 10 MiB on 2 cores is 2 splits
    assert F.predict_num_tasks(pd.DataFrame([empty]), empty, 10.0 * MiB) == 2


_SCAN = {"default_parallelism": 2.0, "max_partition_bytes": 128.0 * MiB, "is_input_stage": True,
         "parallelism_explicit": 0.0, "rdd_names_json": '["FileScanRDD"]'}


def test_one_recorded_file_grows_larger_first_and_many_grow_by_more_files():
    # 100 MiB in one file, 2 tasks: at 800 MiB one file is 7 splits, 8 files of 100 MiB are 8;
    # one run cannot tell them apart and one file stays one
    ref = pd.Series({**_SCAN, "bytes_in": 100.0 * MiB, "num_tasks": 2, "scan_files": 1.0})
    assert [r(800.0 * MiB, ref) for _, r in F._scan_rules(ref)] == [7, 8, 7, 8]
    assert F.predict_num_tasks(pd.DataFrame([ref]), ref, 800.0 * MiB) == 7
    # a scan of one task has its rules too (no files give 1 task of 10 MiB on 2 cores: the
    # nearest count, 2)
    one = pd.Series({**_SCAN, "bytes_in": 10.0 * MiB, "num_tasks": 1})
    assert [r(10.0 * MiB, one) for _, r in F._scan_rules(one)] == [2, 2]
    # 100 MiB by sc.textFile in 10 splits: 10 files; at 400 MiB more files first (40 splits)
    hadoop = pd.Series({**_SCAN, "bytes_in": 100.0 * MiB, "num_tasks": 10, "rdd_names_json": '["HadoopRDD"]'})
    assert [r(400.0 * MiB, hadoop) for _, r in F._scan_rules(hadoop)] == [40, 20]
    assert F.predict_num_tasks(pd.DataFrame([hadoop]), hadoop, 400.0 * MiB) == 40


def test_the_scan_rules_keep_spark_sql_files_max_partition_num():
    # 200 files of 59 MiB on 2 cores: 7 partitions, packed again into 5 at maxPartitionNum 5
    assert F.file_scan_tasks(200, 59 * MiB, 2, 128 * MiB, 4 * MiB, 0.0) == 7
    ref = pd.Series({**_SCAN, "bytes_in": 59.0 * MiB, "num_tasks": 5, "scan_files": 200.0,
                     "files_max_partitions": 5.0})
    assert [r(59.0 * MiB, ref) for _, r in F._scan_rules(ref)] == [5, 5, 5, 5]
