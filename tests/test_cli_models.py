"""runs -> fit -> predict -> evaluate through the real CLI entry point (no JVM)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
from test_hybrid import synthetic_job

from sparkpredict.cli import main
from sparkpredict.store import io as store_io


def _store_from(runs: pd.DataFrame, path) -> None:
    st = store_io.open(path, create=True)
    st.append({"runs": pd.DataFrame({
        "run_id": runs["run_id"], "app_id": runs["run_id"], "job": runs["job"], "status": "succeeded",
        "start_ms": np.arange(len(runs)) * 1000, "wall_ms": (runs["runtime_s"] * 1000).round().astype("int64"),
        "executors_requested": runs["executors"], "executor_cores": runs["executor_cores"],
        "executor_memory_mb": runs["executor_memory_mb"], "input_bytes": runs["input_bytes"],
        "updated_ms": 1})})


def test_runs_fit_predict_evaluate(tmp_path, capsys):
    runs = pd.concat([synthetic_job("etl", cliff=False, sizes=(8, 12, 16), execs=(2, 4, 8)),
                      synthetic_job("ml", seed=4, sizes=(8, 12, 16), execs=(2, 4, 8))], ignore_index=True)
    _store_from(runs, tmp_path / "store")
    csv = tmp_path / "runs.csv"
    assert main(["runs", "--store", str(tmp_path / "store"), "--out", str(csv)]) == 0
    table = pd.read_csv(csv)
    assert len(table) == len(runs) and set(table["job"]) == {"etl", "ml"}

    assert main(["fit", str(csv), "--out", str(tmp_path / "models")]) == 0
    assert "saved 2 model(s)" in capsys.readouterr().out

    q = pd.DataFrame({"job": ["ml", "etl", "ml"], "input_bytes": [10 * 2**30, 12 * 2**30, 40 * 2**30],
                      "executors": [4, 2, 16], "note": ["x", "y", "z"]})
    q.to_csv(tmp_path / "q.csv", index=False)
    assert main(["predict", str(tmp_path / "models"), str(tmp_path / "q.csv"), "--out", str(tmp_path / "p.csv")]) == 0
    p = pd.read_csv(tmp_path / "p.csv")
    assert list(p["note"]) == ["x", "y", "z"]  # rows in query order, columns kept
    assert np.all(p["lower_s"] <= p["predicted_runtime_s"]) and np.all(p["predicted_runtime_s"] <= p["upper_s"])
    assert p["model"].notna().all() and p.loc[2, "extrapolation"] > 1.0

    # sizes in human units, as everywhere else in the CLI: the same rows, the same predictions
    q.assign(input_bytes=["10GiB", "12GiB", "40GiB"]).to_csv(tmp_path / "qh.csv", index=False)
    assert main(["predict", str(tmp_path / "models"), str(tmp_path / "qh.csv"), "--out", str(tmp_path / "ph.csv")]) == 0
    ph = pd.read_csv(tmp_path / "ph.csv")
    assert list(ph["input_bytes"]) == list(q["input_bytes"])
    assert np.allclose(ph["predicted_runtime_s"], p["predicted_runtime_s"])
    for col, bad in (("input_bytes", "40XB"), ("executors", "four")):
        q.assign(**{col: q[col].astype(object).where(q.index != 1, bad)}).to_csv(tmp_path / "qb.csv", index=False)
        capsys.readouterr()
        assert main(["predict", str(tmp_path / "models"), str(tmp_path / "qb.csv"), "--out", str(tmp_path / "pb.csv")]) == 2
        assert f"query row 2: {col} '{bad}' is not a" in capsys.readouterr().err
        assert not (tmp_path / "pb.csv").exists()

    pd.DataFrame({"job": ["nope"], "input_bytes": [1e9], "executors": [2]}).to_csv(tmp_path / "q2.csv", index=False)
    capsys.readouterr()
    assert main(["predict", str(tmp_path / "models"), str(tmp_path / "q2.csv"), "--out", str(tmp_path / "p2.csv")]) == 2
    err = capsys.readouterr().err
    assert "no model for job(s) 'nope'; known jobs: etl, ml" in err
    assert not (tmp_path / "p2.csv").exists()

    assert main(["evaluate", str(csv), "--json", "--models", "amdahl,auto", "--split", "cv3"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {r["model"] for r in out["rows"]} == {"amdahl", "combined"}
    assert out["summary"]["cv3"]["jobs"] == 2
    assert main(["evaluate", str(csv), "--models", "amdahl", "--split", "extrap_size"]) == 0
    assert "| **mean** |" in capsys.readouterr().out


def test_cli_errors_are_one_line(tmp_path, capsys):
    assert main(["fit", str(tmp_path / "missing.csv"), "--out", str(tmp_path / "m")]) == 2
    assert "not found" in capsys.readouterr().err
    pd.DataFrame({"job": ["a"], "input_bytes": [1]}).to_csv(tmp_path / "bad.csv", index=False)
    assert main(["fit", str(tmp_path / "bad.csv"), "--out", str(tmp_path / "m")]) == 2
    assert "lacks column(s) executors" in capsys.readouterr().err
    assert main(["predict", str(tmp_path / "m"), str(tmp_path / "bad.csv"), "--out", str(tmp_path / "p.csv")]) == 2
    assert "no sparkpredict models" in capsys.readouterr().err
    assert main(["evaluate", str(tmp_path / "bad.csv")]) == 2
    capsys.readouterr()
    synthetic_job("etl", sizes=(8, 12, 16), execs=(2, 4, 8)).to_csv(tmp_path / "ok.csv", index=False)
    assert main(["evaluate", str(tmp_path / "ok.csv"), "--models", "amdahl,nope"]) == 2
    assert "unknown model kind(s) 'nope'" in capsys.readouterr().err
