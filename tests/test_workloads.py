"""Workload generators (deterministic, sized, cached) and the Spark bodies on real data."""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from sparkpredict import workloads as W
from sparkpredict.errors import InputError, WorkloadError
from sparkpredict.workloads import generate as gen

MB = 1000**2


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(Path(path).rglob("part-*")):
        h.update(p.relative_to(path).as_posix().encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def _lines(path: Path) -> list[bytes]:
    out: list[bytes] = []
    for p in sorted(Path(path).rglob("part-*")):
        out.extend(p.read_bytes().splitlines())
    return out


def test_registry_names_and_scripts():
    assert set(W.names()) == {"wordcount", "sort", "kmeans", "pagerank", "logreg", "sqljoin"}
    for name in W.names():
        script = W.get(name).script
        assert script.is_file(), script
        assert f'main("{name}"' in script.read_text()


def test_unknown_workload_names_the_known_ones():
    with pytest.raises(WorkloadError) as e:
        W.get("terasort2")
    assert "unknown workload 'terasort2'" in e.value.message
    assert "wordcount" in e.value.fix and "sqljoin" in e.value.fix


def test_size_below_minimum_is_refused(tmp_path):
    w = W.get("sqljoin")
    with pytest.raises(WorkloadError) as e:
        w.data(w.min_bytes - 1, 0, tmp_path)
    assert "below the sqljoin generator's minimum" in e.value.message
    assert not any(tmp_path.iterdir())  # nothing generated
    with pytest.raises(InputError) as e:
        w.data("lots", 0, tmp_path)
    assert "e.g. 300GB" in e.value.fix and not any(tmp_path.iterdir())


@pytest.mark.parametrize("name", sorted(W.WORKLOADS))
def test_generator_is_sized_and_deterministic(name, tmp_path):
    w = W.get(name)
    size = w.min_bytes + 300_000
    a = w.data(size, 7, tmp_path / "a")
    b = w.data(size, 7, tmp_path / "b")
    c = w.data(size, 8, tmp_path / "c")
    assert _digest(a) == _digest(b)
    assert _digest(a) != _digest(c)
    actual = gen.data_size(a)
    longest = max(len(ln) for ln in _lines(a)) + 1
    assert size - longest < actual <= size  # short of the size by less than one line
    assert gen.manifest(a)["bytes"] == actual
    for p in Path(a).rglob("part-*"):  # every part holds whole lines only
        data = p.read_bytes()
        assert data.endswith(b"\n") and len(data) <= gen.PART_BYTES


def test_larger_size_extends_the_smaller_one(tmp_path):
    w = W.get("sort")
    small, big = w.data(2 * MB, 1, tmp_path), w.data(3 * MB, 1, tmp_path)
    s, b = _lines(small), _lines(big)
    assert b[: len(s)] == s
    assert all(len(x) == 99 for x in b)  # TeraGen-like 100-byte records (newline included)


def test_cached_data_is_reused_not_regenerated(tmp_path):
    w = W.get("wordcount")
    p1 = w.data(1 * MB, 0, tmp_path)
    stamp = {p: p.stat().st_mtime_ns for p in p1.rglob("*")}
    p2 = w.data(1 * MB, 0, tmp_path)
    assert p1 == p2 == w.data("1MB", 0, tmp_path)  # a size in words, as everywhere else
    assert {p: p.stat().st_mtime_ns for p in p2.rglob("*")} == stamp
    # an interrupted generation (no manifest) is never taken for a complete data set
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def _expected(name: str, path: Path) -> dict:
    """What the body must find, computed from the files in plain Python."""
    if name == "wordcount":
        words = [w for ln in _lines(path) for w in ln.split(b" ") if w]
        return {"words": len(words), "distinct_words": len(set(words))}
    if name == "sort":
        keys = sorted(ln[:10].decode() for ln in _lines(path))
        return {"records": len(keys), "first_key": keys[0]}
    if name == "kmeans":
        return {"points": len(_lines(path))}
    if name == "pagerank":
        nodes = {int(x) for ln in _lines(path) for x in ln.split(b",")}
        return {"nodes": len(nodes)}
    if name == "sqljoin":
        return {"orders": len(_lines(path / "orders")), "groups": 20}
    return {}


@pytest.mark.spark
@pytest.mark.parametrize("name", W.names())
def test_workload_body_does_the_work(spark_app, tmp_path, name):
    """Each body, on its smallest input, as an application recorded by the listener."""
    w = W.get(name)
    path = w.data(w.min_bytes, 3, tmp_path / "data")
    with spark_app(tmp_path / "store", job=f"smoke-{name}") as spark:
        result = w.run(spark, path, seed=3)
    for k, v in _expected(name, path).items():
        assert result[k] == v, (name, k)
    if name == "logreg":
        assert result["accuracy"] > 0.6  # labels follow a logistic model: learnable
    if name == "kmeans":
        assert result["training_cost"] > 0


@pytest.mark.parametrize("script,args,message", [
    ("sort.py", ["--size", "10KB"], "below the sort generator's minimum"),
    ("wordcount.py", ["--size", "abc"], "cannot read 'abc' as a size"),
    ("wordcount.py", ["--size", "1MB", "--data", "/nonexistent/folder"], "--data /nonexistent/folder is not a folder"),
    ("retrain.py", ["--store", "/nonexistent/store"], "no sparkpredict store"),
    ("retrain.py", ["--store", "/nonexistent/store", "--partitions", "-1"], "--partitions -1 must be at least 1"),
    # argparse's own refusal: its usage and error, and a fix line (it had none)
    ("retrain.py", ["--store", "/nonexistent/store", "--partitions", "x"], "invalid int value: 'x'"),
])
def test_job_scripts_refuse_bad_arguments_before_spark_starts(script, args, message):
    """`spark-submit jobs/X.py` with a mistake: one error and one fix line, exit 2, no JVM (these
    run with plain Python: a Spark session would take seconds and print its own start-up)."""
    import subprocess
    import sys
    from pathlib import Path

    job = Path(__file__).resolve().parents[1] / "jobs" / script
    r = subprocess.run([sys.executable, str(job), *args], capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 2, r.stderr[-2000:]
    assert message in r.stderr and "fix:" in r.stderr and "Traceback" not in r.stderr, r.stderr[-2000:]


def test_a_negative_seed_is_refused_before_anything_is_generated(tmp_path):
    """numpy refused it mid-generation with a bare ValueError (`expected non-negative integer`)."""
    import subprocess
    import sys

    w = W.get("sort")
    for seed in (-1, 1.5, "3"):
        with pytest.raises(InputError) as e:
            w.data("1MB", seed=seed, cache_dir=tmp_path)
        assert f"seed {seed!r}" in e.value.message and "0 or more" in e.value.fix
    assert not any(tmp_path.iterdir())
    assert W.check_seed(0) == 0 and W.check_seed(2**70) == 2**70
    job = Path(__file__).resolve().parents[1] / "jobs" / "sort.py"
    r = subprocess.run([sys.executable, str(job), "--size", "1MB", "--seed", "-1", "--cache", str(tmp_path)],
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 2 and "error: seed -1" in r.stderr and "fix:" in r.stderr, r.stderr[-2000:]
    assert "Traceback" not in r.stderr and not any(tmp_path.iterdir())


def test_a_job_script_sets_only_what_the_submitter_did_not():
    """The sweep's settings (W.spark_settings), and the input size, are the script's defaults:
    a user's spark-submit --conf of any of them wins."""
    every = W.script_settings(3_999_996, set())
    assert every == {**W.spark_settings(3_999_996), "spark.sparkpredict.inputBytes": "3999996"}
    mine = {"spark.sql.shuffle.partitions", "spark.sparkpredict.inputBytes", "spark.master"}
    assert W.script_settings(3_999_996, mine) == {k: v for k, v in every.items() if k not in mine}


@pytest.mark.spark
def test_a_job_script_runs_the_sweep_settings_and_the_submitters_conf_wins(tmp_path):
    """`sparkpredict submit -- jobs/wordcount.py` ran Spark's defaults (603 tasks on 1 MB against
    a sweep's 15). And the script read spark-submit's --conf before the py4j gateway was up,
    from an empty SparkConf, so its own values replaced the user's (submit --input-size 5MB was
    recorded as the generated 999983 bytes; a --conf of shuffle partitions would have been too)."""
    import json
    import os
    import subprocess
    import sys

    from sparkpredict.store import io

    job = Path(__file__).resolve().parents[1] / "jobs" / "wordcount.py"
    store = tmp_path / "store"
    cmd = [sys.executable, "-m", "sparkpredict", "submit", "--store", str(store), "--job", "wc",
           "--input-size", "5MB", "--", "--master", "local[2]", "--driver-memory", "512m",
           "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=7",
           str(job), "--size", "1MB", "--cache", str(tmp_path / "cache")]
    r = subprocess.run(cmd, env=dict(os.environ, PYSPARK_PYTHON=sys.executable), capture_output=True,
                       text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    (run,) = io.open(store).runs().to_dict("records")
    props = json.loads(run["properties_json"])
    generated = gen.data_size(W.get("wordcount").data("1MB", cache_dir=tmp_path / "cache"))
    shared = W.spark_settings(generated)
    assert props["spark.sql.shuffle.partitions"] == "7" != shared["spark.sql.shuffle.partitions"]  # the user's
    assert props["spark.default.parallelism"] == shared["spark.default.parallelism"]  # the sweep's
    assert props["spark.sql.files.maxPartitionBytes"] == shared["spark.sql.files.maxPartitionBytes"]
    assert run["input_bytes"] == 5 * 1000**2 != generated  # submit --input-size wins over the script's
    # 1 read task per 1 MiB part, 4 + 7 shuffle tasks... far from Spark's defaults' 603
    assert run["status"] == "succeeded" and run["num_tasks"] < 50, run["num_tasks"]
