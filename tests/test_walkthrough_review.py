"""A newcomer's walk through README and docs: a count whose curve shows no growth beyond the
largest size, a history that mixes declared and measured input sizes."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from sparkpredict.models.hybrid import capped_beyond_sizes

HISTORY = Path(__file__).parent / "data" / "history"


def _curve(F):
    """Known shares at the largest size, 1 MB: 1 executor 1 s fixed + 1 s growing (0.5), 2
    executors 1 s + 0.5 s (1/3), 3 executors a curve that falls with size (no growth: 0)."""
    S, E = F["input_bytes"], F["executors"]
    return np.select([E == 1, E == 2], [1 + S / 1e6, 1 + 0.5 * S / 1e6], 3 - 0.01 * S / 1e6)


def test_a_count_without_growth_of_its_own_grows_by_the_runs_median_share():
    F = {"input_bytes": np.full(3, 1e7), "executors": np.array([1.0, 2.0, 3.0])}  # 10x the largest
    raw = _curve(F)
    counts = np.array([1.0, 2.0, 3.0])
    before = capped_beyond_sizes(_curve, F, raw, (1e5, 1e6), "linear", counts)
    now = capped_beyond_sizes(_curve, F, raw, (1e5, 1e6), "linear_pooled", counts)
    # 3 executors: flat at the largest size's 2.99 s (the demo's "~1.5s" at 16 MB, 1 GB and 10 GB)
    assert before[2] == pytest.approx(2.99)
    # now its largest size's runtime grows by the median share, 1/3, over the 9x more input
    assert now[2] == pytest.approx(2.99 * (1 + 9 / 3))
    # the counts whose curves grow keep their own growth where it is the larger
    assert now[0] == before[0] == pytest.approx(11.0)
    assert now[1] == before[1] == pytest.approx(1.5 + 0.5 * 9)
    # within the sizes nothing changes
    inside = {"input_bytes": np.full(3, 5e5), "executors": counts}
    assert np.array_equal(capped_beyond_sizes(_curve, inside, _curve(inside), (1e5, 1e6), "linear_pooled", counts),
                          _curve(inside))


def test_a_history_mixing_declared_and_measured_sizes_is_warned_of(tmp_path, monkeypatch):
    from sparkpredict import suggest_executors
    from sparkpredict.store import io as store_io

    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "store"
    shutil.copytree(HISTORY, path)
    st = store_io.open(path)
    runs = st.runs()
    one = runs[(runs.job == "sort") & (runs.status == "succeeded")].tail(1)
    st.append({"runs": one.assign(run_id="app-measured", app_id="app-measured", input_bytes_source="measured",
                                  updated_ms=one.updated_ms + 10**6, start_ms=one.start_ms + 10**6)})
    warned = [w for w in suggest_executors("sort", "64MB", store=path).warnings if "input size was declared" in w]
    assert warned == [("the history of sort mixes 24 runs whose input size was declared (--input-size, "
                      "spark.sparkpredict.inputBytes) with 1 whose size was measured (the bytes its stages read: "
                      "a file read twice, as CSV schema inference reads it, counts twice), so one input may be "
                      "recorded as two sizes. Declare the size on every run of the job or on none; `sparkpredict "
                      "store edit RUN_ID... --input-size SIZE` corrects runs recorded already")]
    assert not [w for w in suggest_executors("wordcount", "64MB", store=path).warnings if "declared" in w]


def test_explain_says_when_a_run_lost_its_time_outside_its_stages(tmp_path, monkeypatch, capsys):
    """A run the runtime model found 1.6x slow (wall time) was explained as -7 % (stages only)."""
    from sparkpredict import monitor
    from sparkpredict.cli import main
    from sparkpredict.store import io as store_io

    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "store"
    shutil.copytree(HISTORY, path)
    st = store_io.open(path)
    runs = st.runs()
    slow = runs[(runs.job == "sort") & (runs.status == "succeeded")].iloc[[0]]
    # the same run, its driver 30 s longer outside its stages (a cold start, a driver-side step)
    st.append({"runs": slow.assign(wall_ms=slow.wall_ms + 30_000, end_ms=slow.end_ms + 30_000,
                                   updated_ms=slow.updated_ms + 10**6)})
    rid = slow.run_id.iloc[0]
    e = monitor.explain_run(rid, path)
    assert e.wall_ms == slow.wall_ms.iloc[0] + 30_000
    (said,) = [w for w in e.warnings if "with no stage running" in w]
    assert said.startswith("the run spent 3") and "with no stage running" in said and "its clean runs a median" in said
    other = runs[(runs.job == "sort") & (runs.run_id != rid)].run_id.iloc[0]
    assert not [w for w in monitor.explain_run(other, path).warnings if "with no stage running" in w]
    assert main(["explain", rid, "--store", str(path)]) == 0
    assert f"  wall     {int(e.wall_ms // 1000)}" in capsys.readouterr().out


def test_the_memory_warning_leaves_a_size_the_advice_calls_recorded(tmp_path, monkeypatch):
    """18.8 MB against a run of 18,766,538 bytes (0.18 % more) was warned of, and told to set
    the driver's 1024 MiB that was set already ("1.00 GiB")."""
    from sparkpredict import suggest_executors

    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))

    def said(size):
        a = suggest_executors("sqljoin", size, store=HISTORY, executor_counts="1,3")
        return [w for w in a.warnings if "local mode" in w], a.extrapolates

    largest = 31_999_986  # sqljoin's largest recorded input, bytes
    assert said(f"{largest * 1.002:.0f}") == ([], False)
    (warned,), far = said(f"{largest * 1.02:.0f}")
    assert far and "of >= 1045 MiB stays within what ran" in warned  # ceil(1.02 x 1024) MiB


def test_submit_runs_no_more_local_executors_than_a_sweep_would(tmp_path, capsys, monkeypatch):
    """`submit --executors 12` rewrote the master to local-cluster[12,1,1024] on 2 cores, and
    `--executors auto --objective time` advised 8 executor JVMs there; a sweep refuses both."""
    import os
    import shlex

    from sparkpredict import suggest_executors
    from sparkpredict.cli import main
    from tests.test_advise_history import history, make_store

    monkeypatch.setattr(os, "cpu_count", lambda: 2)  # 4 x 2 task slots at most, as a sweep allows
    path = make_store(tmp_path / "store", history())
    on_yarn = suggest_executors("etl", "30GB", objective="time", store=path).executors
    assert on_yarn > 8  # the limit binds below
    rc = main(["submit", "--store", path, "--job", "etl", "--executors", "auto", "--input-size", "30GB",
               "--objective", "time", "--dry-run", "--", "--master", "local-cluster[1,1,1024]", "job.py"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    (master,) = [a for a in shlex.split(out.strip()) if a.startswith("local-cluster[")]
    assert 1 <= int(master[len("local-cluster["):].split(",")[0]) <= 8
    rc = main(["submit", "--store", path, "--job", "etl", "--executors", "12", "--dry-run", "--",
               "--master", "local-cluster[1,1,1024]", "job.py"])
    err = capsys.readouterr().err
    assert rc == 2 and "--executors 12 would run local-cluster[12,1,1024] on this 2-core machine" in err
    assert "fix: use at most 8 executors with a local master, or submit to a cluster (--master)" in err


@pytest.mark.parametrize("spark_args", [
    ["--conf", "spark.executor.cores=4", "--master", "local[1]"],  # local[32]
    ["--master", "local-cluster[2,4,1024]"],  # local-cluster[8,4,1024]: 32 cores
    ["--executor-cores", "4", "--master", "local[1]"],
])
def test_the_local_limit_counts_the_cores_each_executor_gets(spark_args, tmp_path, capsys, monkeypatch):
    import os

    from sparkpredict.cli import main

    monkeypatch.setattr(os, "cpu_count", lambda: 2)  # 8 task slots: 2 executors of 4 cores
    rc = main(["submit", "--store", str(tmp_path / "s"), "--job", "j", "--executors", "8", "--dry-run", "--",
               *spark_args, "job.py"])
    err = capsys.readouterr().err
    assert rc == 2 and "fix: use at most 2 executors with a local master" in err, err
    assert main(["submit", "--store", str(tmp_path / "s"), "--job", "j", "--executors", "2", "--dry-run", "--",
                 *spark_args, "job.py"]) == 0
