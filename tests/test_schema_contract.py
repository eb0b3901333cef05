"""The listener writes exactly the columns and types of sparkpredict/store/schema.py."""
from __future__ import annotations

import json
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparkpredict.capture.listener import java_source_dir
from sparkpredict.store import schema as S

_KINDS = {"S": pa.string(), "L": pa.int64(), "I": pa.int32(), "D": pa.float64(), "B": pa.bool_()}


def _java_tables() -> dict[str, list[tuple[str, pa.DataType]]]:
    """Column lists of Tables.java, in order (METRICS expanded where the tables include it)."""
    text = (java_source_dir() / "io" / "sparkpredict" / "Tables.java").read_text()
    pair = re.compile(r'\{"(\w+)",\s*([SLIDB])\}|\bMETRICS\b(?!\s*=)')
    metrics_block = re.search(r"METRICS = \{(.*?)\};", text, re.DOTALL).group(1)
    metrics = [(n, _KINDS[k]) for n, k in re.findall(r'\{"(\w+)",\s*([SLIDB])\}', metrics_block)]
    out = {}
    for chunk in text.split('new Table("')[1:]:
        name, body = chunk.split('"', 1)
        body = body.split("static final", 1)[0]  # up to the next declaration
        cols: list[tuple[str, pa.DataType]] = []
        for pm in pair.finditer(body):
            if pm.group(1):
                cols.append((pm.group(1), _KINDS[pm.group(2)]))
            else:
                cols.extend(metrics)
        out[name] = cols
    return out


def test_java_source_declares_the_schema_modules_columns():
    java = _java_tables()
    assert set(java) == set(S.TABLES)
    for name, schema in S.TABLES.items():
        assert java[name] == [(f.name, f.type) for f in schema], name
    text = (java_source_dir() / "io" / "sparkpredict" / "Tables.java").read_text()
    assert f"SCHEMA_VERSION = {S.SCHEMA_VERSION};" in text and f'"{S.MARKER_FILE}"' in text


@pytest.mark.spark
def test_listener_files_match_schema(spark_app, tmp_path):
    store = tmp_path / "store"
    data = tmp_path / "csv"
    data.mkdir()
    for i in range(3):  # a SQL file scan, for the stage_scans table
        (data / f"part-{i}.csv").write_text("a,1\nb,2\n")
    with spark_app(store, job="contract") as spark:
        rdd = spark.sparkContext.parallelize(range(50), 3).map(lambda x: (x % 4, x))
        assert rdd.reduceByKey(lambda a, b: a + b).count() == 4
        assert spark.read.schema("a string, b int").csv(str(data)).count() == 6
    marker = json.loads((store / S.MARKER_FILE).read_text())
    assert marker == {"format": S.STORE_FORMAT, "schema_version": S.SCHEMA_VERSION}
    for name, schema in S.TABLES.items():
        files = sorted((store / name).glob("part-*.parquet"))
        assert files, f"the listener wrote no {name} file"
        for f in files:
            got = pq.read_schema(f)
            assert [(x.name, x.type) for x in got] == [(x.name, x.type) for x in schema], (name, f.name)
            assert got.metadata[b"sparkpredict.schema_version"] == str(S.SCHEMA_VERSION).encode()
    # nothing else in the store: no temp files, no checksum side files
    leftovers = [p for p in store.rglob("*") if p.is_file() and not p.name.startswith("part-")
                 and p.name != S.MARKER_FILE]
    assert leftovers == []
    from sparkpredict import store as store_mod

    scans = store_mod.open(store).read("stage_scans")
    assert scans["scan_files"].tolist() == [3]  # the one stage of the scan read the 3 files
    # an undeclared run's measured input, as its run row records it
    st = store_mod.open(store)
    [run] = st.runs().itertuples()
    assert run.input_bytes_source == "measured" and st.measured_inputs() == {run.run_id: run.input_bytes}


def test_golden_store_written_by_listener_v0_1_still_reads():
    """A store the listener wrote (word count, local[2], sparkpredict 0.1.0, schema v1) must keep
    reading; when this fails, move SCHEMA_VERSION and keep a reader for the old one."""
    from pathlib import Path

    from sparkpredict import store as store_mod

    st = store_mod.open(Path(__file__).parent / "data" / "capture" / "golden_store_v1")
    runs, stages, tasks = st.runs(), st.stages(), st.tasks()
    assert len(runs) == 1 and runs.iloc[0].status == "succeeded" and runs.iloc[0].schema_version == 1
    assert len(stages) == 2 and len(tasks) == runs.iloc[0].num_tasks == 8
    assert stages["shuffle_write_bytes"].sum() == tasks["shuffle_write_bytes"].sum() > 0
    assert list(st.executors()["executor_id"]) == ["driver"]
    # written before stage_scans: that table reads empty, and the stage models read no count
    from sparkpredict.models.stage_data import load_tables

    assert st.read("stage_scans").empty
    _, with_files, _ = load_tables(st, None, list(runs["run_id"]))
    assert len(with_files) == 2 and with_files["scan_files"].isna().all()
