"""Stop 36's review of its own changes found these; each test failed before its fix."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

HISTORY = Path(__file__).parent / "data" / "history"
FOUR_RUNS = pd.DataFrame({
    "job": ["j"] * 4, "input_bytes": [1e9, 1e9, 2e9, 2e9], "executors": [2, 4, 2, 4],
    "executor_cores": 1, "executor_memory_mb": 1024, "runtime_s": [100.0, 60.0, 190.0, 110.0]})


def test_the_reports_figures_of_a_model_with_no_measured_error_say_no_interval(figure_titles):
    # "bands: 0% interval", "100% inside the 0% interval", "cross-validated MAPE nan%"
    from sparkpredict.models.hybrid import JobRuntimeModel
    from sparkpredict.report_figures import (
        fig_predicted_vs_actual,
        fig_runtime_vs_executors,
    )

    model = JobRuntimeModel(kind="amdahl").fit(FOUR_RUNS)
    features = ["input_bytes", "executors", "executor_cores", "executor_memory_mb"]
    assert fig_runtime_vs_executors(FOUR_RUNS, model, features, 0.9)
    assert fig_predicted_vs_actual(FOUR_RUNS, model, features, 0.9)
    text = "\n".join(figure_titles)
    assert "bands: no interval (no measured error)" in text
    assert "0% interval" not in text.replace("no interval", "") and "nan" not in text, text
