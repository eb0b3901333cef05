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
- a registry artifact and an entry of the advice's fit cache got none of the check a model file
  of `sparkpredict fit` gets at load: its component of no kind, its defaults or training range
  emptied, loaded; `load_models` handed out a model whose first prediction raised a bare
  AttributeError or KeyError, and `sparkpredict suggest --store` died with that traceback
  instead of refitting from the runs;
- the switch's outer part (what predicts beyond the runs) of no kind or without its equation, and
  a default edited to NaN, passed that check too, and predicting beyond the range (or without
  the column) raised a bare TypeError or AttributeError out of `predict` and `suggest`, or gave NaN s;
- a NaN bound of a component's box (the fitted runs' range the switch blends at) passed that
  check, which predicts inside the range, and the advice from such a cache entry changed (8
  executors, not 16) or predicted NaN seconds beyond the range.
"""
from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest
from test_advise_history import history, make_store

from sparkpredict import registry as R
from sparkpredict import retrain as RT
from sparkpredict import store as store_mod
from sparkpredict import suggest_executors
from sparkpredict.advice_cache import _CACHE
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


@pytest.fixture(scope="module")
def retrained(history_store, tmp_path_factory):
    """A store whose registry holds `etl`'s runtime model (as `retrain --local` fits it)."""
    path = tmp_path_factory.mktemp("retrained") / "store"
    shutil.copytree(history_store, path)
    RT.retrain_local(str(path), stage_models=False)
    [artifact] = R.read_registry(str(path)).artifact
    target = path / "_models" / artifact
    return str(path), artifact, target, target.read_text()


@pytest.fixture
def artifact(retrained):
    path, rel, target, text = retrained
    _CACHE.clear()  # the advice's per-process model: keyed by the store's version, unchanged here
    yield path, rel, target, json.loads(text)
    target.write_text(text)
    _CACHE.clear()


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


def test_a_model_file_whose_default_is_nan_is_refused_when_loaded(model_file):
    # the default stands in for a column a query leaves out; the check at load gives every
    # column, so a NaN one loaded and a kernel_ridge model predicted NaN s for every such query
    out, path, doc = model_file
    doc["defaults"]["executor_cores"] = float("nan")
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelError) as got:
        persist.load_models(out)
    assert got.value.message == f"model file {str(path)!r} is corrupt: ValueError: the default of executor_cores is nan"


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


# what an artifact's model may be damaged to -> the words of its error
DAMAGED_ARTIFACTS = [
    (("component", "kind"), None, "is corrupt: ValueError: a component of unknown kind None"),
    (("defaults",), {}, "is corrupt: KeyError: 'executor_cores'"),
    (("training_range",), {}, "its check prediction failed: query lacks column(s) input_bytes, executors"),
    # the switch's outer part, which predicts beyond the runs: the check inside them passed
    (("component", "parts", 1, "kind"), None, "is corrupt: ValueError: a component of unknown kind None"),
    (("component", "parts", 1, "equation"), None,
     "is corrupt: ValueError: a component of kind 'equation' lacks its equation"),
    # a NaN bound of the switch's box: inside the range it predicts as before (the check passed)
    (("component", "box", "executors", 0), float("nan"),
     "is corrupt: ValueError: the range of executors of a component is [nan, 8.0]"),
]


def _damage(doc, where, value):
    part = doc["model"]
    for k in where[:-1]:
        part = part[k]
    part[where[-1]] = value


@pytest.mark.parametrize("where,value,words", DAMAGED_ARTIFACTS)
def test_a_damaged_registry_artifact_is_refused_by_load_models_and_the_advice_refits(artifact, where, value, words):
    path, rel, target, doc = artifact
    _damage(doc, where, value)
    target.write_text(json.dumps(doc))
    with pytest.raises(ModelError) as got:
        R.load_models(path)
    assert got.value.message.startswith(f"model artifact {rel!r} of job 'etl'")
    assert words in got.value.message
    assert got.value.fix == R.refit_fix(path, "etl")
    # the advice passes it over, says why and how to mend it, and answers from the runs
    a = suggest_executors("etl", "500GB", store=path, objective="knee")
    [note] = [w for w in a.warnings if "registry" in w]
    assert note.startswith(f"the registry's model of etl is unusable (model artifact {rel!r}")
    assert note.endswith(R.refit_fix(path, "etl"))
    assert a.model_source.startswith("fitted on the store's runs")
    assert 0 < a.predicted_runtime_s < float("inf")


def test_suggest_from_a_store_whose_artifact_is_damaged_answers_from_the_runs(artifact, capsys):
    path, rel, target, doc = artifact
    _damage(doc, ("defaults",), {})
    target.write_text(json.dumps(doc))
    assert main(["suggest", "--job", "etl", "--input-size", "500GB", "--store", path, "--objective", "knee",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert any(w.startswith(f"the registry's model of etl is unusable (model artifact {rel!r}") and "KeyError" in w
               for w in out["warnings"])


@pytest.mark.parametrize("where,value", [(("component", "kind"), None), (("defaults",), {}),
                                         (("component", "box", "executors", 0), float("nan"))])
def test_a_damaged_entry_of_the_advice_fit_cache_is_refitted_and_kept_anew(history_store, tmp_path, monkeypatch,
                                                                           where, value):
    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path))
    _CACHE.clear()
    before = suggest_executors("etl", "30GB", store=history_store, objective="knee")
    [entry] = (tmp_path / "advice").glob("*.json")
    kept = entry.read_text()
    doc = json.loads(kept)
    part = doc
    for k in where[:-1]:
        part = part[k]
    part[where[-1]] = value
    entry.write_text(json.dumps(doc))
    _CACHE.clear()
    after = suggest_executors("etl", "30GB", store=history_store, objective="knee")
    assert (after.executors, after.predicted_runtime_s, after.upper_s) == \
        (before.executors, before.predicted_runtime_s, before.upper_s)
    assert entry.read_text() == kept  # the refit replaced the damaged entry
    _CACHE.clear()


@pytest.mark.parametrize("field,words", [("extrap_z", "holds a null or NaN"),
                                         ("unvaried", "the value every run had of executor_cores is nan")])
def test_a_model_file_with_a_null_among_its_numbers_is_refused_when_loaded(model_file, field, words):
    """Left open by the probe that found the above: a null item among the extrapolation errors
    loaded, and the advice's upper bound beyond the range was NaN s; a NaN resource value every
    run had loaded, and the advice's warning for another value died in int(NaN)."""
    out, path, doc = model_file
    if field == "extrap_z":
        k = _first_key(doc["extrap_z"])
        assert doc["extrap_z"][k], "no extrapolation errors: the case is not exercised"
        doc["extrap_z"][k][0] = None
    else:
        doc["unvaried"]["executor_cores"] = float("nan")
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelError) as got:
        persist.load_models(out)
    assert got.value.message.startswith(f"model file {str(path)!r} is corrupt: ValueError: ")
    assert words in got.value.message, got.value.message


def test_a_model_file_whose_training_range_is_emptied_is_named_corrupt_without_the_querys_fix(model_file):
    """The check prediction's InputError (no column to predict at) was the query's, and the
    model file's error quoted its fix ("give input_bytes and executors for every row") inside
    the refit's; a registry artifact so damaged said it plainly. One check now words both."""
    out, path, doc = model_file
    doc["training_range"] = {}
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelError) as got:
        persist.load_models(out)
    assert got.value.message == (f"model file {str(path)!r} is corrupt: its check prediction failed: "
                                 "query lacks column(s) input_bytes, executors")
    assert got.value.fix == "refit the models: `sparkpredict fit RUNS --out DIR`"


@pytest.mark.parametrize("where,value,words", [
    (("theta", 0), -1.0, "has a = -1 (not in [0, inf]), beyond what a fit gives"),
    (("theta", 1), 1.5, "has b = 1.5 (not in [0, 1]), beyond what a fit gives"),
    (("power",), 3, "has power = 3 (not 1 or 2), beyond what a fit gives"),
])
def test_a_model_file_whose_equation_is_beyond_any_fit_is_refused_when_loaded(model_file, tmp_path, capsys,
                                                                            where, value, words):
    """Every fit keeps an equation's parameters in its bounds (non-negative least squares) and its
    power 1 or 2. Edited to a = -1, the file loaded, passed the check (a finite runtime in the
    middle of its range) and `suggest --models` advised 1 executor for 0.001 s; a power of 3
    read as 2."""
    out, path, doc = model_file
    eq = doc["component"]["equation"]
    assert eq["name"] == "amdahl", "the case needs the amdahl equation's bounds"
    part = eq
    for k in where[:-1]:
        part = part[k]
    part[where[-1]] = value
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelError) as got:
        persist.load_models(out)
    assert got.value.message == f"model file {str(path)!r}: equation 'amdahl' in a saved model {words}"
    assert "refit" in got.value.fix
    assert main(["suggest", "--models", str(out), "--job", "etl", "--input-size", "30GB"]) == 2
    err = capsys.readouterr().err
    assert "error: model file" in err and words in err and "fix: refit" in err


def test_every_equation_at_its_bounds_or_fitted_to_a_falling_law_loads_back():
    """The bounds check refuses only what no fit gives: parameters on the bounds load, and so
    does the fit of every equation to runs that get faster with input (pushing its parameters
    onto their bounds), at either power."""
    from test_mutation_gaps_models import _grid

    from sparkpredict.models import analytical as A

    for name, eq in A.EQUATIONS.items():
        for end in (0, 1):
            theta = [min(b[end], 1e6) for b in eq.bounds]
            back = A.FittedEquation.from_dict({"name": name, "power": 2, "theta": theta, "sse": 0.0, "n": 4})
            assert list(back.theta) == theta
        S, E = _grid()
        for power in (1, 2):
            fit = A.fit_equation(name, S, E, 100.0 - S / E, power=power)
            assert A.FittedEquation.from_dict(fit.to_dict()) == fit
