"""`sparkpredict evaluate --store S --stage-models` scores the stage-level models beside the rest."""
import json
from pathlib import Path

from sparkpredict.cli import main

HISTORY = Path(__file__).parent / "data" / "history"


def test_stage_models_are_scored_by_evaluate(capsys):
    assert main(["evaluate", "--store", str(HISTORY), "--stage-models", "--models", "amdahl",
                 "--split", "extrap_size", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = [r for r in out["rows"] if r["split"] == "extrap_size"]
    scored = {(r["job"], r["model"]) for r in rows if r.get("mape") is not None}
    for job in ("wordcount", "sort", "sqljoin"):
        for model in ("amdahl", "stage-forest", "replay"):
            assert (job, model) in scored


def test_stage_models_need_a_store(capsys, tmp_path):
    runs = tmp_path / "runs.csv"
    runs.write_text("job,input_bytes,executors,executor_cores,executor_memory_mb,runtime_s\n")
    assert main(["evaluate", str(runs), "--stage-models"]) == 2
    err = capsys.readouterr().err
    assert "--stage-models needs" in err and "fix: add --store" in err
