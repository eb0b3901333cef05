"""The replay against runs of known schedules (tests/synthetic_runs.py): what it must recover."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from synthetic_runs import wordcount_history, wordcount_truth_s

from sparkpredict.models.replay import ReplayRuntimeModel

GIB = 2**30


def test_at_a_recorded_size_another_cluster_splits_its_input_by_its_own_cores():
    """At exactly the recorded size the replay kept the recording's task counts on any cluster:
    4 GiB on 64 executors read 3.37 s, a byte away 2.17 s (truth 2.25 s)."""
    tb = wordcount_history([4 * GIB], [4])
    model = ReplayRuntimeModel(tables=tb).fit(tb["runs"])
    execs = [4, 16, 64]
    for size in (4 * GIB - 1, 4 * GIB, 4 * GIB + 1):
        pred = model.predict(pd.DataFrame({"job": "wc", "input_bytes": float(size), "executors": execs}))
        truth = np.array([wordcount_truth_s(size, e, 4) for e in execs])
        assert np.all(np.abs(pred / truth - 1) < 0.05), (size, pred, truth)
    # the recording itself replays as recorded
    rec = model.predict(pd.DataFrame({"job": ["wc"], "input_bytes": [float(4 * GIB)], "executors": [4]}))
    assert rec[0] == pytest.approx(tb["runs"].wall_ms.iloc[0] / 1000)


def test_two_runs_support_a_third_interval_not_ninety_percent():
    """2 runs' leave-one-out errors were read as a 90 % interval, which certified deadlines;
    such intervals covered 68-76 % of the job's other runs. As for the whole-job models, n errors
    support (n - 1) / (n + 1), and the advice says so."""
    from sparkpredict.advise import suggest_executors

    tb = wordcount_history([1 * GIB, 2 * GIB], [4])
    model = ReplayRuntimeModel(tables=tb).fit(tb["runs"])
    assert model.interval_errors() == 2 and model.max_confidence() == pytest.approx(1 / 3)
    advice = suggest_executors("wc", "1.5GiB", executor_counts=[2, 4, 8], confidence=0.9, models={"wc": model})
    assert advice.interval_confidence == pytest.approx(1 / 3)
    assert any("cannot support the 90% interval asked for, only one up to 33.3%" in w for w in advice.warnings)
    one = ReplayRuntimeModel(tables=tb).fit(tb["runs"].iloc[:1])
    assert one.interval_errors() == 0 and one.max_confidence() == 0.0


def test_executors_of_fewer_cores_than_a_task_takes_are_refused():
    """simulate refused --cores below spark.task.cpus; the replay and stage models predicted
    (28.98 s and 31.48 s for a barrier log at task.cpus 2 on 1 core)."""
    import json

    from synthetic_runs import make_run, tables, wordcount_stages

    from sparkpredict.errors import InputError
    from sparkpredict.models.stages import StageRuntimeModel

    runs = [make_run(f"r{i}", "wc", wordcount_stages(s * GIB, 2, 4), 2, 4, s * GIB, t0=10**12 + i * 10**7)
            for i, s in enumerate((1, 2, 3))]
    for r, _, _ in runs:
        r["properties_json"] = json.dumps(dict(json.loads(r["properties_json"]), **{"spark.task.cpus": "2"}))
    tb = tables(runs)
    q = pd.DataFrame({"job": ["wc"], "input_bytes": [float(GIB)], "executors": [2], "executor_cores": [1]})
    for model in (ReplayRuntimeModel(tables=tb), StageRuntimeModel(tables=tb, n_estimators=5)):
        model.fit(tb["runs"])
        with pytest.raises(InputError) as err:
            model.predict(q)
        assert "1 core per executor cannot run a task" in err.value.message and "2 or more" in err.value.fix
        assert model.predict(q.assign(executor_cores=2))[0] > 0
