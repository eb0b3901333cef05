"""A long-running application writes fewer batches as it ages: a Structured Streaming query or
a driver of many short jobs wrote one batch (about three files) per flushIntervalMs for as long
as it ran, 17,000 files a day at the default, which every read of the store then lists."""
from __future__ import annotations

import time

import pytest

from sparkpredict import store as store_mod

pytestmark = pytest.mark.spark


def _batches(store) -> int:
    return len(list((store / "runs").glob("part-*.parquet")))


def test_a_long_run_stretches_its_flushes_and_keeps_every_job(spark_app, tmp_path):
    store = tmp_path / "store"
    interval_ms, run_s, min_jobs = 20, 16.0, 120
    conf = {"spark.sparkpredict.flushIntervalMs": str(interval_ms), "spark.sparkpredict.tasks": "true"}
    with spark_app(store, job="many-short-jobs", conf=conf) as spark:
        sc = spark.sparkContext
        jobs, t0 = 0, time.monotonic()
        # run_s, and on until min_jobs have run: 142-183 jobs in 16 s here, but 51 beside one
        # busy core, too few for the cap below to tell a stretched interval from none. Up to
        # 4 x run_s, where the stretch still gives about 10 + 10 ln(64 s / 0.2 s) = 68 batches
        while (age_s := time.monotonic() - t0) < run_s or (jobs < min_jobs and age_s < 4 * run_s):
            sc.parallelize(range(2), 2).count()
            jobs += 1
        app = sc.applicationId
    batches = _batches(store)
    print(f"{jobs} jobs in {age_s:.0f} s wrote {batches} batches")
    run = store_mod.open(store).runs()
    # nothing is lost to the stretch: the last batch carries every job
    assert len(run) == 1 and run.iloc[0].run_id == app and run.iloc[0].num_jobs == jobs
    assert len(store_mod.open(store).tasks()) == 2 * jobs
    # one write per interval would be about run_s / 20 ms (the write itself takes some of it):
    # with the interval stretched to a tenth of the run's age, about 10 + 10 ln(16 s / 0.2 s) = 54
    assert jobs >= min_jobs, jobs  # enough jobs to ask for a write every interval
    assert batches <= 80, batches
    # and it stretches from the run's age, not at once to the cap (a wait of 10 min from the
    # first write on left a run of 16 s 2 batches; a loaded machine's slow writes still give 5)
    assert batches >= 5, batches
