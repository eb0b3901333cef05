"""Task counts of input stages follow Spark's file packing, not ``ceil(bytes / split)``.

Every count here is what Spark 4.3 ran on ``local[2]`` (``df.rdd.getNumPartitions()`` of a
CSV, text or Parquet read, ``sc.textFile(...).getNumPartitions()``) for files written to
the sizes given. A SQL scan counts each file's open cost (4 MiB) beside its bytes and packs
small files together up to the split, so 300 files of 200 KiB run 10 tasks where
``ceil(bytes / split)`` said 2; ``sc.textFile`` cuts each file in splits of at most 32 MiB
(the local file system's block), so 300 MiB in one file ran 10 tasks, not 3.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from sparkpredict.features import stages as F

MiB = 2**20
KiB = 2**10
LINE = 42  # bytes of the CSV line the files repeat


def _csv(n_bytes: int) -> int:
    """Bytes of a file of whole lines of at most ``n_bytes`` (as the measured files were written)."""
    return n_bytes // LINE * LINE


# (files, bytes of each, settings) -> tasks Spark 4.3 ran on local[2]
SQL_MEASURED = [
    (1, _csv(300 * MiB), {}, 3),
    (1, _csv(40 * MiB), {}, 2),
    (150, _csv(200 * KiB), {}, 5),
    (300, _csv(200 * KiB), {}, 10),
    (600, _csv(200 * KiB), {}, 20),
    (5, _csv(30 * MiB), {}, 3),
    (5, _csv(60 * MiB), {}, 3),
    (5, _csv(30 * MiB), {"max_partition_bytes": 16 * MiB}, 10),
    (300, _csv(200 * KiB), {"open_cost": 1 * MiB}, 3),
    (300, _csv(200 * KiB), {"parallelism": 8}, 10),          # spark.sql.files.minPartitionNum=8
    (300, _csv(200 * KiB), {"max_partitions": 4}, 4),        # spark.sql.files.maxPartitionNum=4
    (40, 147571920 // 40, {}, 3),                            # Parquet, 40 files of 3.5 MiB
    (40, 147571920 // 40, {"max_partition_bytes": 8 * MiB}, 40),
]


@pytest.mark.parametrize(("files", "size", "conf", "tasks"), SQL_MEASURED)
def test_sql_scan_tasks_are_sparks(files, size, conf, tasks):
    args = {"parallelism": 2, "max_partition_bytes": 128 * MiB, **conf}
    assert F.file_scan_tasks(files, files * size, **args) == tasks


def _scan_row(files: int, size: int, tasks: int, names=("MapPartitionsRDD", "FileScanRDD"), props=None):
    return {"is_input_stage": 1.0, "bytes_in": float(files * size), "num_tasks": float(tasks),
            "default_parallelism": 2.0, "parallelism_explicit": 0.0, "max_partition_bytes": 128.0 * MiB,
            "shuffle_partitions": 200.0, "aqe": 1.0, "rdd_names_json": json.dumps(list(names)),
            **F.file_scan_settings(props or {})}


def _predict(row: dict, new_bytes: float, conf=None) -> int:
    h = pd.DataFrame([row])
    return F.predict_num_tasks(h, h.iloc[0], float(new_bytes), conf)


def test_a_scan_of_small_files_grows_by_its_files():
    # recorded: 300 files of 200 KiB in 10 tasks; Spark ran 600 of them in 20 (the old rule: 10,
    # calibrated by 10 / 2 from its 2 at either size) and 150 in 5
    row = _scan_row(300, _csv(200 * KiB), 10)
    assert _predict(row, 600 * _csv(200 * KiB)) == 20
    assert _predict(row, 150 * _csv(200 * KiB)) == 5
    assert _predict(_scan_row(150, _csv(200 * KiB), 5), 300 * _csv(200 * KiB)) == 10


def test_a_run_s_file_settings_are_read():
    props = {"spark.sql.files.openCostInBytes": "1m", "spark.sql.files.minPartitionNum": "8",
             "spark.sql.files.maxPartitionNum": "4"}
    assert F.file_scan_settings(props) == {"files_open_cost_bytes": MiB, "files_min_partitions": 8.0,
                                           "files_max_partitions": 4.0}
    # minPartitionNum=8 splits 58.6 MiB in 7.3 MiB (plus open costs), 300 files ran 10 tasks;
    # maxPartitionNum=4 packed them in 4
    row = _scan_row(300, _csv(200 * KiB), 4, props=props)
    assert _predict(row, 600 * _csv(200 * KiB)) == 4


def test_a_few_large_files_split_with_their_open_cost():
    # 5 files of 30 MiB ran 3 tasks (two files to a 85 MiB split); 5 of 60 MiB ran 3 too (the
    # old rule, calibrated by 3 / 2, said 4)
    row = _scan_row(5, _csv(30 * MiB), 3)
    assert _predict(row, 5 * _csv(60 * MiB)) == 3


# sc.textFile on local[2]: one file of MiB -> splits Spark ran
HADOOP_MEASURED = [(40, 2), (100, 4), (200, 7), (300, 10)]


@pytest.mark.parametrize(("mib", "tasks"), HADOOP_MEASURED)
def test_text_file_splits_are_hadoops(mib, tasks):
    assert F.hadoop_split_tasks(1, _csv(mib * MiB), 2) == tasks
    assert F.hadoop_split_tasks(300, 300 * _csv(200 * KiB), 2) == 300   # one split a file at least


def test_a_text_file_stage_follows_hadoop_splits():
    # the stage of sc.textFile names its RDDs after the path; recorded 100 MiB in 4 tasks,
    # Spark ran 200 MiB in 7 and 300 MiB in 10 (the old rule: 4 and 6)
    row = _scan_row(1, _csv(100 * MiB), 4, names=("PythonRDD", "/data/in.txt", "/data/in.txt"))
    assert F.hadoop_scan(row["rdd_names_json"])
    assert F.hadoop_scan(json.dumps(["in.txt", "in.txt"])) and F.hadoop_scan(json.dumps(["s3a://b/k"]))
    assert not F.hadoop_scan(json.dumps(["MapPartitionsRDD", "FileScanRDD"]))
    assert not F.hadoop_scan(json.dumps(["PythonRDD", "ParallelCollectionRDD"]))
    assert [_predict(row, _csv(m * MiB)) for m in (40, 200, 300)] == [2, 7, 10]


def _files(folder: Path, count: int, size: int) -> Path:
    folder.mkdir(parents=True)
    line = b"abcdefghij,0123456789,klmnopqrstuvwxyz,42\n"
    for i in range(count):
        (folder / f"part-{i:05d}.csv").write_bytes(line * (size // len(line)))
    return folder


def test_recorded_scans_predict_sparks_count_at_another_size(spark_app, tmp_path):
    """Real runs through the listener: a CSV scan of 150 small files and a textFile of one
    70 MiB file, each predicted at the size of a second run (300 files; one of 150 MiB)."""
    from sparkpredict import store as store_mod
    from sparkpredict.features.runs import runs_table
    from sparkpredict.models.stages import StageRuntimeModel

    store = tmp_path / "store"
    inputs = {"few": _files(tmp_path / "few", 150, 200 * KiB), "many": _files(tmp_path / "many", 300, 200 * KiB),
              "small": _files(tmp_path / "small", 1, 70 * MiB), "large": _files(tmp_path / "large", 1, 150 * MiB)}
    for job, names in (("csv", ("few", "many")), ("text", ("small", "large"))):
        for name in names:
            with spark_app(store, job=job) as spark:
                if job == "csv":
                    spark.read.schema("a string, b string, c string, d string").csv(str(inputs[name])).count()
                else:
                    spark.sparkContext.textFile(str(inputs[name])).count()
    runs = runs_table(store).sort_values("input_bytes")
    stages = store_mod.open(store).stages()
    for job in ("csv", "text"):
        first, second = runs[runs.job == job].run_id
        scan = stages[(stages.input_bytes > 0) & stages.name.str.startswith("count")]
        assert scan[scan.run_id == first].num_tasks.tolist() == ([5] if job == "csv" else [3])
        recorded = scan[scan.run_id == second].num_tasks.tolist()
        assert recorded == ([10] if job == "csv" else [5])   # what Spark ran at the second size
        model = StageRuntimeModel(store=str(store)).fit(runs[runs.run_id == first])
        size = float(runs.loc[runs.run_id == second, "input_bytes"].iloc[0])
        plan = model.stage_plan(job, size, 1)
        assert plan[(plan.is_input_stage == 1) & plan.name.str.startswith("count")].num_tasks.tolist() == recorded


def test_a_name_set_like_a_file_is_no_hadoop_scan(spark_app, tmp_path):
    """``rdd.setName`` may give any RDD a name that looks like a file: a cached RDD named so,
    read again (its cached blocks count as input), is no Hadoop read; ``sc.textFile`` and
    ``sc.hadoopFile`` of a path stay ones. Names as a real run through the listener records them."""
    from sparkpredict import store as store_mod

    store = tmp_path / "store"
    text = _files(tmp_path / "text", 1, 1 * MiB) / "part-00000.csv"
    with spark_app(store, job="named") as spark:
        sc = spark.sparkContext
        for name in ("users.v2", "train/test split", "data.csv cleaned"):
            rdd = sc.parallelize(range(20_000), 2).map(lambda x: (x % 7, x)).setName(name).cache()
            rdd.count()
            rdd.count()
        sc.textFile(str(text)).count()
        sc.hadoopFile(str(text), "org.apache.hadoop.mapred.TextInputFormat",
                      "org.apache.hadoop.io.LongWritable", "org.apache.hadoop.io.Text").count()
    stages = store_mod.open(store).stages()
    named = stages[stages.rdd_names_json.str.contains("users.v2|train/test split|data.csv cleaned")]
    assert len(named) == 6 and (named.input_bytes > 0).sum() == 3   # each second count read the cache
    assert not any(F.hadoop_scan(r) for r in named.rdd_names_json)
    read = stages[stages.rdd_names_json.str.contains(str(text), regex=False)]
    assert len(read) == 3 and all(F.hadoop_scan(r) for r in read.rdd_names_json)  # with hadoopFile's take
    # a textFile of a relative path names two RDDs after it; a name set by hand, one
    assert F.hadoop_scan(json.dumps(["PythonRDD", "in.txt", "in.txt"]))
    assert not F.hadoop_scan(json.dumps(["PythonRDD", "users.v2", "ParallelCollectionRDD"]))


def test_recorded_files_tell_many_small_files_from_a_few_larger_ones(spark_app, tmp_path):
    """300 CSV files of 10 KiB and 3 of 1 MiB hold about the same 3 MiB, and their scans ran
    10 and 2 tasks. The listener records each scan's files (300, 3: Spark's "number of files
    read"), and the model packs those at a new size: 600 files ran 19 tasks and 6 files 2,
    where the files inferred from the task count alone (304.5 and 33 of equal size) said 20
    and 3."""
    from sparkpredict import store as store_mod
    from sparkpredict.features.runs import runs_table
    from sparkpredict.models.stages import StageRuntimeModel

    store = tmp_path / "store"
    sizes = {"many": (300, 10 * KiB), "few": (3, 1 * MiB)}
    for job, (count, size) in sizes.items():
        for times in (1, 2):
            data = _files(tmp_path / f"{job}{times}", count * times, size)
            with spark_app(store, job=job) as spark:
                spark.read.schema("a string, b string, c string, d string").csv(str(data)).count()
    runs = runs_table(store).sort_values("input_bytes")
    st = store_mod.open(store)
    stages, scans = st.stages(), st.read("stage_scans")
    without = {"runs": st.runs(), "stages": stages, "tasks": st.tasks()}  # as a store from before stage_scans
    got = {}
    for job, (count, _) in sizes.items():
        first, second = runs[runs.job == job].run_id
        # exactly the files each scan selected, one row for the scan's one stage
        assert sorted(scans[scans.run_id.isin([first, second])].scan_files) == [count, 2 * count]
        scan = stages[(stages.input_bytes > 0) & stages.name.str.startswith("count")]
        ran = [int(scan[scan.run_id == r].num_tasks.iloc[0]) for r in (first, second)]
        size = float(runs.loc[runs.run_id == second, "input_bytes"].iloc[0])

        def planned(model, job=job, size=size) -> int:
            plan = model.stage_plan(job, size, 2)  # local[2]: as recorded, 2 cores
            return int(plan[(plan.is_input_stage == 1) & plan.name.str.startswith("count")].num_tasks.iloc[0])

        fit = runs[runs.run_id == first]
        got[job] = (ran, planned(StageRuntimeModel(store=str(store)).fit(fit)),
                    planned(StageRuntimeModel(tables=without).fit(fit)))
    # (what Spark ran at the first and second size, predicted from the first run, the inference's)
    assert got == {"many": ([10, 19], 19, 20), "few": ([2, 2], 2, 3)}


def test_recorded_runs_decide_how_the_files_grow():
    """Two runs of the same 3 files, of 1 MiB and 4 MiB: the files grew larger, not more. At
    40 MiB each Spark packs 3 tasks (file_scan_tasks, checked against Spark above); one run's
    3 files, taken to grow by more files, say 5; files inferred from the counts, 2."""
    rows = [dict(_scan_row(3, _csv(m * MiB), F.file_scan_tasks(3, 3 * _csv(m * MiB), 2, 128 * MiB)),
                 scan_files=3.0) for m in (1, 4)]
    assert [r["num_tasks"] for r in rows] == [2, 2]
    new = 3 * _csv(40 * MiB)
    assert F.file_scan_tasks(3, new, 2, 128 * MiB) == 3

    def predict(rs) -> int:
        h = pd.DataFrame(rs)
        return F.predict_num_tasks(h, h.iloc[0], float(new))

    assert predict(rows) == 3
    assert predict(rows[:1]) == 5
    assert predict([{**r, "scan_files": float("nan")} for r in rows]) == 2
