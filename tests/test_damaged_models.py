"""Model files damaged on disk (edited by hand, cut short, copied over): each is refused where it
is read, with one error that names the file and its refit, and the advice answers from the runs
instead. Found by a probe that wrote real models (`save_models` of every kind, `retrain_local`'s
registry artifacts, the advice's fit cache), replaced each JSON leaf with a wrong-typed value,
cut and emptied the files and swapped in another job's, then loaded, predicted, and ran
`sparkpredict predict` and `suggest`. What it found, each failing here on the code before:

- a list of numbers of a saved model (its extrapolation errors, recorded executor counts or
  seen-size errors) replaced by a number or null loaded, and the first prediction beyond the
  training range raised a bare ValueError or TypeError (inside the interval), out of
  `sparkpredict predict` as a traceback;
"""
from __future__ import annotations

import json

import pandas as pd
import pytest
from test_advise_history import history, make_store

from sparkpredict import store as store_mod
from sparkpredict.cli import main
from sparkpredict.errors import ModelError
from sparkpredict.features.runs import runs_table
from sparkpredict.models import persist

SIZES_GB = (10, 20, 40, 80)
# one row inside the runs' range, one 6x beyond their largest size and count (the interval
# there reads the extrapolation errors)
QUERY = pd.DataFrame({"job": ["etl", "etl"], "input_bytes": [30e9, 500e9], "executors": [4, 48]})


@pytest.fixture(scope="module")
def history_store(tmp_path_factory):
    return make_store(tmp_path_factory.mktemp("damaged") / "store", history(sizes=SIZES_GB))


@pytest.fixture(scope="module")
def saved_model(history_store, tmp_path_factory):
    """(folder, file name, text) of the `etl` model `save_models` wrote."""
    out = tmp_path_factory.mktemp("models")
    persist.save_models(persist.fit_all(runs_table(store_mod.open(history_store).runs()), kind="amdahl"), out)
    name = json.loads((out / persist.INDEX).read_text())["jobs"]["etl"]
    return out, name, (out / name).read_text()


@pytest.fixture
def model_file(saved_model):
    out, name, text = saved_model
    yield out, out / name, json.loads(text)
    (out / name).write_text(text)


def _first_key(d):
    return next(iter(d))


# field of the saved model -> a value that is not a list of numbers (the residuals and sizes,
# so damaged, already failed the loader's check prediction with a TypeError)
NOT_LISTS = [("extrap_z", None), ("executor_levels", 0.5), ("seen_residuals", 2)]


@pytest.mark.parametrize("field,value", NOT_LISTS)
def test_a_model_file_whose_list_of_numbers_is_a_number_is_refused_when_loaded(model_file, field, value):
    out, path, doc = model_file
    if field == "extrap_z":  # one fold's errors, as the interval beyond the range reads them
        assert doc["extrap_z"], "the fit kept no extrapolation errors: the case is not exercised"
        doc["extrap_z"][_first_key(doc["extrap_z"])] = value
    else:
        assert isinstance(doc[field], list)
        doc[field] = value
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelError) as got:
        persist.load_models(out)
    assert got.value.message.startswith(f"model file {str(path)!r} is corrupt: ValueError: ")
    assert "must be a list of numbers" in got.value.message
    assert got.value.fix == "refit the models: `sparkpredict fit RUNS --out DIR`"


def test_predict_of_a_model_file_whose_errors_are_null_exits_2_with_its_fix(model_file, tmp_path, capsys):
    out, path, doc = model_file
    for k in doc["extrap_z"]:
        doc["extrap_z"][k] = None
    path.write_text(json.dumps(doc))
    query = tmp_path / "q.csv"
    QUERY.to_csv(query, index=False)
    assert main(["predict", str(out), str(query), "--out", str(tmp_path / "p.csv")]) == 2
    err = capsys.readouterr().err
    assert f"error: model file {str(path)!r} is corrupt" in err and "fix: refit the models" in err
    assert not (tmp_path / "p.csv").exists()
