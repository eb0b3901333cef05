"""Behaviours of sparkpredict/advice_source.py that a sixth mutation pass (HistorySource, the path
behind suggest_executors() and `sparkpredict suggest`; 2026-12-07, the mutants the fifth pass
left unrun) found no test pinning: each test here failed on a one-statement change that every
other JVM-free advice test let pass.

No JVM: the model is its attributes as the advice reads them, a model folder its files.
"""
from __future__ import annotations

from types import SimpleNamespace

from sparkpredict.advice_source import HistorySource
from sparkpredict.models import persist


def test_the_size_asked_reaches_a_model_that_does_not_list_it_among_its_features():
    """Mutant: ``query`` drops ``X.setdefault("input_bytes", ...)``, so a model given in
    ``models={job: model}`` whose ``feature_names_`` leave out the input size was asked without
    the size of the question."""
    model = SimpleNamespace(feature_names_=["executors", "executor_cores"], latest_={"executor_cores": 4.0})
    X = HistorySource("etl", model).query(5 * 2**30, [2.0, 8.0], None, None)
    assert list(X["input_bytes"]) == [5.0 * 2**30] * 2
    assert list(X["executors"]) == [2.0, 8.0]
    assert list(X["executor_cores"]) == [4.0, 4.0]
    # a model that lists it gets the size from the question, not from its latest run
    model = SimpleNamespace(feature_names_=["input_bytes", "executors"], latest_={"input_bytes": 7.0})
    assert list(HistorySource("etl", model).query(100, [3.0], None, None)["input_bytes"]) == [100.0]


def test_a_file_beside_the_model_files_that_is_none_of_them_does_not_reload_the_models(tmp_path, monkeypatch):
    """Mutant: ``_from_dir`` stamps a file that ends in ``.json`` *or* is a file, so a note or a
    log written into a model folder reloaded its models at the next question; only a model file
    (its JSON) rewritten does."""
    loads: list[str] = []

    def load_models(path, jobs):
        loads.append(path)
        return {job: object() for job in jobs}

    monkeypatch.setattr(persist, "load_models", load_models)
    (tmp_path / persist.INDEX).write_text("{}")
    first = HistorySource._from_dir("etl", str(tmp_path))
    (tmp_path / "notes.txt").write_text("refit after the upgrade")
    (tmp_path / "old.json.bak").write_text("{}")
    assert HistorySource._from_dir("etl", str(tmp_path)) is first
    assert len(loads) == 1
    (tmp_path / "etl.json").write_text('{"rewritten": true}')
    assert HistorySource._from_dir("etl", str(tmp_path)) is not first
    assert loads == [str(tmp_path)] * 2
