"""Runs on Spark's standalone manager (``spark://``, ``local-cluster[N,C,M]``) count the executors
they held, not spark.executor.instances.

That manager starts executors by its workers' free cores; spark.executor.instances is read only
as dynamic allocation's first count. A review recorded runs that set 1 and 2 on
``local-cluster[3,1,1024]``: each held 3 (listener and ingest alike), and the runs table read
them as 1 and 2, so the models learnt three runs of the same shape as runs of 1, 2 and 3
executors, while the stage model, which reads the executors held, saw 3.
"""
from __future__ import annotations

import json

import pandas as pd

from sparkpredict.features.runs import executors_and_cores, standalone_masters
from sparkpredict.features.stages import config_features
from sparkpredict.models.replay import ReplayRuntimeModel


def _runs() -> pd.DataFrame:
    da = json.dumps({"spark.dynamicAllocation.enabled": "true", "spark.executor.instances": "1"})
    fixed = json.dumps({"spark.executor.instances": "1"})
    return pd.DataFrame({
        "master": ["local-cluster[3,1,1024]", " spark://head:7077 ", "yarn", "local-cluster[3,1,1024]",
                   "k8s://https://api:6443", "local[2]"],
        "executors_requested": [1.0, 2.0, 2.0, 1.0, 4.0, 1.0],
        "executors_max": [3.0, 4.0, 3.0, 3.0, 4.0, 1.0],
        "executors_mean": [2.7, 3.6, 1.9, 1.25, 3.9, 1.0],
        "executor_cores": [1.0, 2.0, 2.0, 1.0, 2.0, 2.0],
        "task_slots": [3.0, 8.0, 6.0, 3.0, 8.0, 2.0],
        "properties_json": [fixed, fixed, fixed, da, fixed, "{}"],
    })


def test_standalone_masters_are_told_apart():
    assert list(standalone_masters(_runs()["master"])) == [True, True, False, True, False, False]
    assert not standalone_masters(pd.Series([None, "local-cluster[3,1]", "sparkle://x"])).any()


def test_the_runs_table_counts_a_standalone_run_at_the_executors_it_held():
    execs, _ = executors_and_cores(_runs())
    # local-cluster and spark:// at what they held; yarn and k8s at what they asked for (a
    # replaced executor may overlap the one it replaces); dynamic allocation at its mean; local[2]
    # at its threads
    assert list(execs) == [3.0, 4.0, 2.0, 1.25, 4.0, 2.0]


def test_the_replay_and_the_stage_features_count_them_alike():
    runs = _runs()
    replay = ReplayRuntimeModel._executors(runs)
    # ... and local[2] at its threads: the replay reads every run as the runs table does
    assert list(replay) == list(executors_and_cores(runs)[0]) == [3.0, 4.0, 2.0, 1.25, 4.0, 2.0]
    # the stage model reads the executors held: on the standalone manager all three agree
    for i in (0, 1):
        assert config_features(runs.iloc[i])["executors"] == replay[i] == executors_and_cores(runs)[0][i]
