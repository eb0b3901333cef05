"""A review of the whole-job models and their CLI (stop 35) found these; each test failed before its fix."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sparkpredict.cli import main


@pytest.fixture(scope="module")
def param_models(tmp_path_factory):
    """Models of a job whose runtime grows with a job parameter, ``iterations``, as well as the
    input: T = 5 + iterations * 2 s/GiB * S / E, small noise."""
    rng = np.random.default_rng(0)
    rows = []
    for it in (1, 5, 10):
        for gib in (1, 2, 4, 8):
            for e in (1, 2, 4, 8):
                for rep in range(2):
                    t = (5 + it * 2.0 * gib / e) * rng.lognormal(0, 0.02)
                    rows.append({"job": "iter", "input_bytes": gib * 2**30, "executors": e, "executor_cores": 2,
                                 "executor_memory_mb": 4096, "iterations": it, "runtime_s": t,
                                 "run_id": f"r-{it}-{gib}-{e}-{rep}"})
    folder = tmp_path_factory.mktemp("param")
    pd.DataFrame(rows).to_csv(folder / "runs.csv", index=False)
    assert main(["fit", str(folder / "runs.csv"), "--out", str(folder / "models")]) == 0
    return folder / "models"


def _predict(models, tmp_path, text: str, *extra: str) -> int:
    (tmp_path / "q.csv").write_text(text)
    return main(["predict", str(models), str(tmp_path / "q.csv"), "--out", str(tmp_path / "p.csv"), *extra])


def test_a_bad_cell_in_a_job_parameter_column_is_named_not_the_column_dropped(param_models, tmp_path, capsys):
    head = "job,input_bytes,executors,iterations\n"
    assert _predict(param_models, tmp_path, head + "iter,4GiB,2,10\n") == 0
    alone = pd.read_csv(tmp_path / "p.csv")["predicted_runtime_s"].iloc[0]
    assert alone == pytest.approx(5 + 10 * 2.0 * 4 / 2, rel=0.1)
    capsys.readouterr()
    # one cell that is no number made the column text: every row got the history's iterations
    assert _predict(param_models, tmp_path, head + "iter,4GiB,2,10\niter,4GiB,2,1x\n") == 2
    err = capsys.readouterr().err
    assert "query row 2 below the header: iterations '1x' is not a number" in err
    assert "job parameters as numbers" in err and "--skip-bad-rows" in err
    assert not (tmp_path / "p.csv").exists() or pd.read_csv(tmp_path / "p.csv").shape[0] == 1
    assert _predict(param_models, tmp_path, head + "iter,4GiB,2,10\niter,4GiB,2,1x\n", "--skip-bad-rows") == 0
    out = pd.read_csv(tmp_path / "p.csv")
    assert len(out) == 1 and out["predicted_runtime_s"].iloc[0] == pytest.approx(alone)


def test_a_misspelt_parameter_column_is_warned_about(param_models, tmp_path, capsys):
    assert _predict(param_models, tmp_path, "job,input_bytes,executors,iterationz\niter,4GiB,2,10\n") == 0
    err = capsys.readouterr().err
    assert "warning: query column(s) iterationz are no feature of the models of these jobs" in err
    assert "iterations" in err


def test_a_query_of_no_rows_is_an_error(param_models, tmp_path, capsys):
    assert _predict(param_models, tmp_path, "job,input_bytes,executors\n") == 2
    assert "has no rows" in capsys.readouterr().err
    assert not (tmp_path / "p.csv").exists()


@pytest.mark.parametrize("name,p", [("ernest", 4), ("hybrid:ernest", 4), ("hybrid:plate2d~fade", None),
                                    ("ernest|fully_connected_c1", None), ("amdahl|hybrid:amdahl~fade", None),
                                    ("gbm", 0)])
def test_rrse_counts_the_parameters_of_a_combined_models_equations(name, p):
    from sparkpredict.evaluate import _n_params
    from sparkpredict.models.analytical import EQUATIONS

    class Named:
        name_ = name

    parts = [x.split(":", 1)[-1].removesuffix("~fade") for x in name.split("|")]
    want = p if p is not None else max(EQUATIONS[x].n_params for x in parts)
    assert want > 0 or name == "gbm"
    assert _n_params(Named()) == want  # the combined names counted 0


def test_the_c3o_loader_gives_each_executor_its_nodes_memory():
    """C3O's memory column is the cluster's (c4.2xlarge: 30000 MB at 2 nodes, 180000 at 12): taken
    as each executor's, it grew with the executor count within one job."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from c3o_data import load_c3o

    runs = load_c3o("sort")
    per_machine = runs.groupby("machine_type")["executor_memory_mb"].unique()
    assert {m: list(v) for m, v in per_machine.items()} == {
        "c4.2xlarge": [15000], "m4.2xlarge": [32000], "r4.2xlarge": [61000]}
