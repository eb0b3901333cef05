"""A SQL file scan's input is the size of its files, live on Spark 4 and from its event log.

Parquet on Spark 4 reads "vectored" (on by default): the task input metric counts about the
footers, so a run's measured input was a few kB for megabytes of Parquet, and another value
again with vectored reads off (the columns read). Both capture paths now count each scan's
files, as its "size of files read" metric tells the driver.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sparkpredict import store as store_mod
from sparkpredict.capture.eventlog_ingest import ingest_event_logs

FILES = 4
HISTORY = Path(__file__).parent / "data" / "history"


@pytest.fixture(scope="module")
def parquet(spark_app, tmp_path_factory) -> tuple[Path, int]:
    """4 Parquet files of three columns, and their bytes on disk."""
    out = tmp_path_factory.mktemp("parquet") / "data"
    with spark_app(tmp_path_factory.mktemp("writer-store"), job="writer") as spark:
        df = spark.range(300_000).selectExpr("id", "id * 1.5 AS x", "concat('row-', id) AS s")
        df.repartition(FILES).write.parquet(str(out))
    files = sorted(out.glob("part-*.parquet"))
    assert len(files) == FILES
    return out, sum(f.stat().st_size for f in files)


def _run(store: Path):
    runs = store_mod.open(store).runs()
    assert len(runs) == 1
    return runs.iloc[0], store_mod.open(store).stages()


# one partition per file: the share a partial read counts is then exact
ONE_FILE_A_PARTITION = {"spark.sql.files.maxPartitionBytes": "2m", "spark.sql.files.openCostInBytes": "1m"}


def _logged(tmp_path: Path, name: str) -> tuple[Path, dict[str, str]]:
    """A store for the application ``name`` and its conf: one partition per file, and an event
    log of it in a folder of its own."""
    logs = tmp_path / f"{name}-logs"
    logs.mkdir()
    return tmp_path / name, {**ONE_FILE_A_PARTITION, "spark.eventLog.enabled": "true",
                             "spark.eventLog.dir": str(logs), "spark.eventLog.rolling.enabled": "false"}


def _input(store: Path) -> int:
    """The listener's measured input of the store's one run, which the ingest of the same
    application's event log must measure too (the paths of the rule that the real logs of
    tests/data/eventlogs do not take: shares, persisted RDDs, one plan run again)."""
    run, _ = _run(store)
    assert run.input_bytes_source == "measured"
    [log] = [p for p in store.with_name(store.name + "-logs").iterdir() if p.is_file()]
    other = store.with_name(store.name + "-ingested")
    assert ingest_event_logs([log], other).files[0].outcome == "ingested"
    assert int(store_mod.open(other).runs()["input_bytes"].iloc[0]) == run.input_bytes
    return int(run.input_bytes)


@pytest.mark.spark
@pytest.mark.parametrize("vectored", ["true", "false"])
def test_a_parquet_scan_counts_its_files_whichever_way_parquet_reads(spark_app, parquet, tmp_path, vectored):
    path, size = parquet
    logs = tmp_path / "logs"
    logs.mkdir()
    store = tmp_path / "store"
    conf = {"spark.hadoop.parquet.hadoop.vectored.io.enabled": vectored, "spark.sql.adaptive.enabled": "true",
            "spark.eventLog.enabled": "true", "spark.eventLog.dir": str(logs),
            "spark.eventLog.rolling.enabled": "false"}
    with spark_app(store, job="scan", conf=conf) as spark:
        row = spark.read.parquet(str(path)).selectExpr("sum(x) AS t", "count(*) AS n").collect()[0]
        assert row.n == 300_000
    run, stages = _run(store)
    # the tasks' input metric: the footers when vectored, one column's chunks when not
    task_metric = int(stages["input_bytes"].sum())
    assert 0 < task_metric < size / 2, (vectored, task_metric, size)
    assert (run.input_bytes_source, run.input_bytes) == ("measured", size)
    # the event log of the same application, ingested: the same input
    [log] = [p for p in logs.iterdir() if p.is_file()]
    ingested = ingest_event_logs([log], tmp_path / "ingested")
    assert ingested.files[0].outcome == "ingested"
    assert int(store_mod.open(tmp_path / "ingested").runs()["input_bytes"].iloc[0]) == size


@pytest.mark.spark
def test_a_scan_read_in_part_counts_its_share_of_partitions(spark_app, parquet, tmp_path):
    """`limit(1).collect()` runs one partition of four: a quarter of the files, not all."""
    path, size = parquet
    store, conf = _logged(tmp_path, "limit")
    with spark_app(store, job="limit", conf=conf) as spark:
        df = spark.read.parquet(str(path))
        assert df.rdd.getNumPartitions() == FILES
        assert len(df.limit(1).collect()) == 1
    assert _input(store) == int(size / FILES)


@pytest.mark.spark
def test_a_cached_scan_counts_once_and_a_fresh_read_again(spark_app, parquet, tmp_path):
    """Actions over a cached DataFrame read the cache and run no scan; a new DataFrame over the
    same files reads them again, as a job does."""
    path, size = parquet
    store, conf = _logged(tmp_path, "cached")
    with spark_app(store, job="cached", conf=conf) as spark:
        df = spark.read.parquet(str(path)).cache()
        assert df.count() == 300_000
        assert df.selectExpr("sum(id)").collect()[0][0] == 300_000 * 299_999 // 2
        assert df.filter("id % 2 = 0").count() == 150_000
    assert _input(store) == size
    store2, conf = _logged(tmp_path, "fresh-twice")
    with spark_app(store2, job="twice", conf=conf) as spark:
        for _ in range(2):
            assert spark.read.parquet(str(path)).count() == 300_000
    assert _input(store2) == 2 * size


def test_a_history_measured_before_and_since_the_files_rule_is_warned_of(tmp_path, monkeypatch):
    """A Parquet job's runs recorded by an older listener hold the footers (a thousandth of the
    input), the runs since hold the files: one job, two scales, until the older are corrected."""
    from sparkpredict import suggest_executors
    from sparkpredict.store import io as store_io

    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "store"
    shutil.copytree(HISTORY, path)
    st = store_io.open(path)
    runs = st.runs()
    job = runs[runs.job == "sqljoin"].sort_values("start_ms")
    older, since = job.iloc[:12], job.iloc[12:]

    def measured(rows, version, scale):
        return rows.assign(input_bytes_source="measured", sparkpredict_version=version,
                           input_bytes=rows.input_bytes // scale, updated_ms=rows.updated_ms + 10**6)

    st.append({"runs": measured(older, "0.2.0", 1000)})
    assert not [w for w in suggest_executors("sqljoin", "32MB", store=path).warnings if "before 0.3.0" in w]
    st.append({"runs": measured(since, "0.3.0", 1)})
    warned = [w for w in suggest_executors("sqljoin", "32MB", store=path).warnings if "before 0.3.0" in w]
    ids = list(older.run_id)
    assert len(warned) == 1 and warned[0].startswith(
        "12 runs of sqljoin had their input measured by sparkpredict before 0.3.0 (median 12.0 KB), "
        "far below the 12 measured since (median 12.0 MB)"), warned
    assert warned[0].endswith(f"--exclude`): {ids[0]} {ids[1]} {ids[2]} (and 9 more)")
    assert not [w for w in suggest_executors("sort", "32MB", store=path).warnings if "before 0.3.0" in w]
    # declared (even at the footers' sizes): no warning, the user said what they are
    st.append({"runs": older.assign(updated_ms=older.updated_ms + 2 * 10**6, input_bytes=older.input_bytes // 1000,
                                    sparkpredict_version="0.2.0")})
    assert not [w for w in suggest_executors("sqljoin", "32MB", store=path).warnings if "before 0.3.0" in w]


@pytest.mark.spark
def test_one_plan_run_twice_reads_twice_and_a_cached_one_once(spark_app, parquet, tmp_path):
    """From a review: `df.collect()` twice runs one physical plan (the same scan metrics) twice,
    and read the files twice for one count; over a cached DataFrame the executions share one
    read, the partitions a `show()` ran counted with those the next action ran."""
    path, size = parquet
    store, conf = _logged(tmp_path, "plan-thrice")
    with spark_app(store, job="twice", conf=conf) as spark:
        df = spark.read.parquet(str(path)).select("id")
        for _ in range(3):
            assert len(df.collect()) == 300_000
    assert _input(store) == 3 * size
    store2, conf = _logged(tmp_path, "cached-show")
    with spark_app(store2, job="cached-show", conf=conf) as spark:
        df = spark.read.parquet(str(path)).cache()
        df.show(1)
        assert df.count() == 300_000 and len(df.collect()) == 300_000
    assert _input(store2) == size


def test_a_scans_reads_end_with_their_sql_execution():
    """From a diff review: each execution of one plan kept its read of the scan for the whole
    run (100,000 collects of one DataFrame held 244 MB in the ingest). Its count stays."""
    from sparkpredict.capture.eventlog_scans import ScanInput

    scans = ScanInput()
    plan = {"sparkPlanInfo": {"nodeName": "Scan parquet", "children": [], "metrics": [
        {"name": "number of output rows", "accumulatorId": 11}, {"name": "size of files read", "accumulatorId": 12}]}}
    scans.plan(plan)
    scans.driver_updates({"accumUpdates": [[12, 1000]]})
    for execution in range(1000):
        ran = scans.stage_completed([{"ID": 11, "Value": "5"}], rdd_id=7, partitions=4, ran={execution % 4},
                                    execution=str(execution), persisted=False)
        assert ran
        scans.execution_ended({"executionId": execution})
    assert scans.counted == 1000 * 250  # a quarter of the files each time
    [scan] = scans._scans.values()
    assert scan.reads == {} and scan.counted == {} and scans._by_execution == {}


def test_a_stage_completed_after_its_sql_execution_ended_keeps_no_read():
    """From a static review: a stage completing after its SQL execution's end (adaptive
    execution cancels the stages left once a limit is reached) made a read of it that nothing
    removed. It counts as before, and its read goes."""
    from sparkpredict.capture.eventlog_scans import ScanInput

    scans = ScanInput()
    scans.plan({"sparkPlanInfo": {"nodeName": "Scan parquet", "children": [], "metrics": [
        {"name": "number of output rows", "accumulatorId": 11}, {"name": "size of files read", "accumulatorId": 12}]}})
    scans.driver_updates({"accumUpdates": [[12, 1000]]})
    for execution in range(100):
        scans.execution_ended({"executionId": execution})
        assert scans.stage_completed([{"ID": 11, "Value": "5"}], rdd_id=7, partitions=4, ran={0},
                                     execution=str(execution), persisted=False)
    assert scans.counted == 100 * 250
    [scan] = scans._scans.values()
    assert scan.reads == {} and scan.counted == {} and scans._by_execution == {}


def test_a_stage_records_the_files_its_scans_selected():
    """The files count (the driver's "number of files read", Photon's "files read") is the
    scans' selection, summed over the scans a stage ran, whatever share of their partitions
    ran; None where a scan it ran did not tell, and for a stage that ran none."""
    from sparkpredict.capture.eventlog_scans import ScanInput

    def node(rows: int, size: int, files: int | None, name: str = "number of files read") -> dict:
        metrics = [{"name": "number of output rows", "accumulatorId": rows},
                   {"name": "size of files read", "accumulatorId": size}]
        if files is not None:
            metrics.append({"name": name, "accumulatorId": files})
        return {"nodeName": "Scan", "children": [], "metrics": metrics}

    scans = ScanInput()
    scans.plan({"sparkPlanInfo": {"nodeName": "Union", "metrics": [], "children": [
        node(11, 12, 13), node(21, 22, 23, "files read"), node(31, 32, None)]}})
    scans.driver_updates({"accumUpdates": [[12, 1000], [13, 300], [22, 500], [23, 3], [32, 70]]})

    def stage(*ids: int, ran=frozenset({0})) -> int | None:
        ok = scans.stage_completed([{"ID": i, "Value": "5"} for i in ids], rdd_id=ids[0] if ids else None,
                                   partitions=4, ran=set(ran), execution="1", persisted=False)
        assert ok == bool(ids)
        return scans.stage_files

    assert stage(11) == 300          # one of 4 partitions ran: still all 300 files
    assert stage(11, 21) == 303      # a union of two scans in one stage
    assert stage(21) == 3            # Photon's name
    assert stage(11, 31) is None     # a scan that did not tell its files
    assert stage() is None           # no known scan


def _csv_files(folder: Path, count: int, size: int) -> None:
    folder.mkdir(parents=True)
    for i in range(count):
        (folder / f"part-{i:05d}.csv").write_bytes(b"aaaaaaaaaa,bbbbbbbbbb,cccccccccc,dddddddd\n" * (size // 42))


@pytest.mark.spark
def test_live_scans_files_are_what_spark_selected_and_the_ingest_records_the_same(spark_app, tmp_path):
    """The replayed cluster logs (test_eventlog) hold none of these: dynamic partition pruning
    (Spark posts the static and the pruned count; the pruned one is what it packs), static
    partition pruning, a union of two scans, one plan collected twice, `show`/`limit` (one
    partition of the union: only the scan it ran tells its files), a cached read, Parquet, under
    adaptive execution. Live on Spark 4.3, each stage attempt's files as Spark selected them,
    and the event log of the same application ingested to the same rows."""
    schema = "a string, b string, c string, d string"
    facts = tmp_path / "facts"
    for p in range(4):  # 3, 6, 9 and 12 files of 100 KiB
        _csv_files(facts / f"p={p}", 3 * (p + 1), 100 * 1024)
    dim = tmp_path / "dim"
    dim.mkdir()
    (dim / "d.csv").write_text("1,x\n3,y\n")
    _csv_files(tmp_path / "ua", 3, 2**20)
    _csv_files(tmp_path / "ub", 5, 2**20)
    store, conf = _logged(tmp_path, "scans")
    conf = {k: v for k, v in conf.items() if k not in ONE_FILE_A_PARTITION}
    conf["spark.sql.adaptive.enabled"] = "true"
    with spark_app(store, job="scans", conf=conf) as spark:
        f = spark.read.schema(schema).csv(str(facts))
        d = spark.read.schema("k int, v string").csv(str(dim)).filter("v = 'y'")
        assert f.join(d, f.p == d.k).count() == 12 * 2438             # p=3 alone: DPP
        assert f.filter("p = 1").count() == 6 * 2438                   # static pruning
        u = spark.read.schema(schema).csv(str(tmp_path / "ua")).union(spark.read.schema(schema).csv(str(tmp_path / "ub")))
        assert u.count() == u.count() == 8 * 24966
        assert len(u.limit(5).collect()) == 5
        f.write.parquet(str(tmp_path / "pq"))
        assert spark.read.parquet(str(tmp_path / "pq")).filter("p = 2").count() == 9 * 2438
    runs = store_mod.open(store).runs()
    mine = store_mod.open(store).read("stage_scans")
    files = sorted(int(n) for n in mine.scan_files)
    # dim 1; DPP 12 (of 30 listed); p=1 6; the union 8, twice; limit: 3 (its one partition
    # was the first scan's); the write read all 30; Parquet: the files written (2 tasks)
    assert files == [1, 2, 3, 6, 8, 8, 12, 30], files
    [log] = [p for p in store.with_name(store.name + "-logs").iterdir() if p.is_file()]
    other = tmp_path / "ingested"
    assert ingest_event_logs([log], other).files[0].outcome == "ingested"
    theirs = store_mod.open(other).read("stage_scans")
    key = ["stage_id", "stage_attempt_id"]
    assert (mine.sort_values(key)[[*key, "scan_files"]].values.tolist()
            == theirs.sort_values(key)[[*key, "scan_files"]].values.tolist())
    assert runs.run_id.iloc[0] == theirs.run_id.iloc[0] == mine.run_id.iloc[0]


def _json_files(folder: Path, count: int, size: int) -> None:
    folder.mkdir(parents=True)
    line = b'{"a":"aaaaaaaaaa","b":"bbbbbbbbbb","c":"cccccccccc","d":"dddddddd"}\n'
    for i in range(count):
        (folder / f"part-{i:05d}.json").write_bytes(line * (size // len(line)))


@pytest.mark.spark
def test_a_scan_that_kept_no_row_counts_with_the_scans_of_its_stage(spark_app, tmp_path):
    """From a review: a union of CSV and JSON whose JSON side's pushed filter kept no row. That
    scan lists no task-side metric, so its stage counted the CSV files only (5.5 of 15.2 MB in
    the review) and its files were lost: the stage counted a scan, so its task metric did not
    count either. The plan's scans between stage boundaries ran in one stage."""
    schema = "a string, b string, c string, d string"
    _csv_files(tmp_path / "c", 3, 2**20)
    _json_files(tmp_path / "j", 4, 2**20)
    size = sum(f.stat().st_size for d in ("c", "j") for f in (tmp_path / d).iterdir())
    store, conf = _logged(tmp_path, "union-empty-side")
    conf = {k: v for k, v in conf.items() if k not in ONE_FILE_A_PARTITION}
    with spark_app(store, job="union", conf=conf) as spark:
        c = spark.read.schema(schema).csv(str(tmp_path / "c")).filter("a = 'aaaaaaaaaa'")
        j = spark.read.schema(schema).json(str(tmp_path / "j")).filter("a = 'none'")
        assert c.union(j).count() == 3 * (2**20 // 42)
        # a scan of its own stage that kept no row keeps its stage's task metric (about the files)
        assert j.count() == 0
    _, stages = _run(store)
    # the union's stage: its readers fetched both scans' files
    assert len([s for s in stages.itertuples() if s.input_bytes >= size]) == 1
    json_size = size - sum(f.stat().st_size for f in (tmp_path / "c").iterdir())
    recorded = _input(store)  # the ingest of the same application's log agrees
    assert size + json_size <= recorded < size + json_size * 1.02, (recorded, size, json_size)
    scans = store_mod.open(store).read("stage_scans")
    assert sorted(int(n) for n in scans.scan_files) == [7]


def test_the_scans_of_one_stage_fragment_count_together_and_not_across_an_exchange():
    """A stage that lists one scan's metrics ran the scans of its plan fragment (a union), not
    those beyond an exchange, a reused exchange, a subquery or a cached relation."""
    from sparkpredict.capture.eventlog_scans import ScanInput

    def scan(base: int) -> dict:
        return {"nodeName": "Scan csv ", "children": [], "metrics": [
            {"name": "number of output rows", "accumulatorId": base + 1},
            {"name": "size of files read", "accumulatorId": base + 2}]}

    def node(name: str, *children: dict) -> dict:
        return {"nodeName": name, "children": list(children), "metrics": []}

    plan = node("AdaptiveSparkPlan", node("Union", node("Filter", scan(10)), node("Project", scan(20)),
                                          node("Exchange", scan(30)),
                                          node("InMemoryTableScan", scan(40)),
                                          node("ReusedExchange", scan(50)),
                                          node("Filter", scan(60), node("SubqueryBroadcast", scan(70)))))
    scans = ScanInput()
    scans.plan({"sparkPlanInfo": plan})
    scans.driver_updates({"accumUpdates": [[b + 2, b * 100] for b in (10, 20, 30, 40, 50, 60, 70)]})
    assert scans.stage_completed([{"ID": 11, "Value": "5"}], rdd_id=1, partitions=2, ran={0, 1},
                                 execution="1", persisted=False)
    assert scans.counted == 1000 + 2000 + 6000  # 10, and the scans 20 and 60 beside it
    assert scans.stage_completed([{"ID": 31, "Value": "5"}], rdd_id=2, partitions=2, ran={0, 1},
                                 execution="1", persisted=False)
    assert scans.counted == 9000 + 3000  # beyond the exchange: alone


@pytest.mark.spark
def test_a_readers_schema_probes_are_no_input(spark_app, tmp_path):
    """From a review: `spark.read.option("header", True).csv(path)` runs a job that reads the
    first line (its scan counted the share of partitions it ran: a one-file CSV twice its size),
    `inferSchema` one more that reads every file (three times), and `spark.read.json(path)`
    without a schema one that reads every file (by the task metric: twice). The job's input is
    the files its actions read."""
    folder = tmp_path / "csv"
    _csv_files(folder, 1, 2**20)
    [file] = folder.iterdir()
    file.write_bytes(b"a,b,c,d\n" + file.read_bytes())
    _json_files(tmp_path / "json", 2, 2**19)
    size = sum(f.stat().st_size for d in ("csv", "json") for f in (tmp_path / d).iterdir())
    store, conf = _logged(tmp_path, "probes")
    with spark_app(store, job="probes", conf=conf) as spark:
        df = spark.read.option("header", True).option("inferSchema", True).csv(str(folder))
        assert df.columns == ["a", "b", "c", "d"] and df.agg({"d": "max"}).collect()[0][0] == "dddddddd"
        js = spark.read.json(str(tmp_path / "json"))
        assert js.columns == ["a", "b", "c", "d"] and js.agg({"d": "max"}).collect()[0][0] == "dddddddd"
    assert _input(store) == size
    stages = store_mod.open(store).stages()
    assert int(stages.input_bytes.sum()) > 2 * size  # what Spark's readers fetched, the probes' too
    # the probes' stages that ran a scan keep its row (the header's, the inference's)
    assert sorted(int(n) for n in store_mod.open(store).read("stage_scans").scan_files) == [1, 1, 1, 2]


def test_a_probe_is_told_by_the_readers_call_site():
    from sparkpredict.capture.eventlog_scans import is_reader_probe

    assert is_reader_probe("org.apache.spark.sql.classic.DataFrameReader.csv(DataFrameReader.scala:266)\nx")
    assert is_reader_probe("org.apache.spark.sql.DataFrameReader.json(DataFrameReader.scala:384)")  # Spark 3
    assert not is_reader_probe("org.apache.spark.sql.classic.Dataset.collectToPython(Dataset.scala:2139)\n"
                               "org.apache.spark.sql.classic.DataFrameReader.csv(DataFrameReader.scala:266)")
    assert not is_reader_probe(None) and not is_reader_probe("")


@pytest.mark.spark
def test_a_readers_probe_that_computes_a_cached_rdd_is_the_runs_read(spark_app, tmp_path):
    """From a review: `spark.read.json(sc.textFile(path).cache())` infers the schema in a job
    that the reader runs, which computes the cached RDD: that stage read the files (1,048,560
    bytes), and the action read the cached blocks. Left out as a probe, the run recorded 0
    bytes of input, in the listener and the ingest alike; before probes were left out, the
    files once. Without the cache, the action reads the files again and the probe counts
    nothing. A CSV header's probe over a cached RDD computes its first partition alone, which
    the action then reads cached: half of two files was recorded."""
    _json_files(tmp_path / "json", 2, 2**19)
    path = str(tmp_path / "json")
    size = sum(f.stat().st_size for f in (tmp_path / "json").iterdir())
    for name, cached in (("cached", True), ("plain", False)):
        store, conf = _logged(tmp_path, name)
        with spark_app(store, job=name, conf=conf) as spark:
            rdd = spark.sparkContext.textFile(path)
            df = spark.read.json(rdd.cache() if cached else rdd)
            assert df.agg({"d": "max"}).collect()[0][0] == "dddddddd"
        assert _input(store) == size, name
    folder = tmp_path / "csv"
    _csv_files(folder, 2, 2**20)
    for f in folder.iterdir():
        f.write_bytes(b"a,b,c,d\n" + f.read_bytes())
    size = sum(f.stat().st_size for f in folder.iterdir())
    store, conf = _logged(tmp_path, "header")
    with spark_app(store, job="header", conf=conf) as spark:
        rdd = spark.sparkContext.textFile(str(folder)).cache()
        assert spark.read.option("header", True).csv(rdd).agg({"d": "max"}).collect()[0][0] == "dddddddd"
    # a text RDD's tasks read a little beyond their split (the line that crosses it)
    assert size <= _input(store) < size * 1.01
