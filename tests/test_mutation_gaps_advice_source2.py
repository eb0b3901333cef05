"""Behaviours of sparkpredict/advice_source.py that a sixth mutation pass (HistorySource, the path
behind suggest_executors() and `sparkpredict suggest`; 2026-12-07, the mutants the fifth pass
left unrun) found no test pinning: each test here failed on a one-statement change that every
other JVM-free advice test let pass.

No JVM: the model is its attributes as the advice reads them, a model folder its files.
"""
from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
from test_advise_history import history, make_store
from test_mutation_gaps_source import _raw

from sparkpredict.advice_source import _SAME_RATIO, HistorySource, _size_mix
from sparkpredict.cli import main
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


def test_a_first_submit_of_a_new_job_names_the_other_jobs_without_the_attach_fix(tmp_path, capsys):
    """Mutant: ``_unknown_job`` drops ``err.listed = listed``, so `submit --executors auto` of a
    job the store has never seen read the whole fix instead, and its "if mistyped" clause went on
    to tell the user to attach the listener or run ``sparkpredict submit --job`` (the command
    being run)."""
    path = make_store(tmp_path / "store", history(sizes=(10, 20), execs=(1, 2), repeats=1))
    rc = main(["submit", "--store", path, "--executors", "auto", "--job", "nightly", "--input-size", "1GB",
               "--", "--master", "local[1]", "x.py"])
    err = capsys.readouterr().err
    assert rc == 2
    fix = err.splitlines()[-1]
    assert fix.startswith("fix: submit its first run with --executors N: the next submit advises from it"), err
    assert fix.endswith("; if 'nightly' is mistyped, use one of: etl"), err
    assert "attach" not in err


def test_a_run_exactly_the_least_ratio_above_the_model_is_listed_as_above_it():
    """Mutant: ``runs_above_model`` keeps a run fitted in sample only when its runtime over the
    prediction is *more than* ``min_ratio``, so a run that took exactly 1.25x the model's time
    (the least the advice and the report name) was left out."""
    runs = pd.DataFrame({"run_id": ["a", "b", "c"], "input_bytes": [1e9] * 3, "executors": [2.0] * 3,
                         "runtime_s": [5.0, 6.0, 4.0]})
    model = SimpleNamespace(predict=lambda r: [4.0] * len(r))  # no out-of-fold ratios kept
    assert HistorySource("etl", model, runs).runs_above_model() == [("b", 1.5), ("a", 1.25)]


def test_the_count_the_memory_warning_names_is_the_least_that_passes_its_check_after_rounding():
    """Mutant: ``_memory_warning`` drops the loop that steps its count down while one fewer
    executor passes the check, so where the ceil() of the division rounded up past an exact
    multiple of what ran it named one executor too many."""
    run_bytes, mem_mb = 64753712744, 4096
    runs = pd.DataFrame({"run_id": ["a"], "input_bytes": [float(run_bytes)], "executors": [7.0],
                         "executor_memory_mb": [512.0], "runtime_s": [60.0]})
    src = HistorySource("etl", SimpleNamespace(), runs)
    size = 7437426435168  # by the warning's own check, 100 executors of 4096 MiB hold it, 99 do not
    limit = run_bytes / (7 * 512 * 2**20) * _SAME_RATIO
    assert size / (99 * mem_mb * 2**20) > limit >= size / (100 * mem_mb * 2**20)
    said = [w for w in src.warnings(size, 1, mem_mb, size / (mem_mb * 2**20)) if "executor memory" in w]
    assert len(said) == 1 and said[0].endswith("; >= 100 executors (or more executor memory) stay within what ran"), said


def test_declared_sizes_without_what_their_stages_read_are_counted_as_unknown():
    """Mutant: ``_size_mix`` drops ``read = read or {}``, so asked without what the stages read
    (its default) it raised AttributeError on the first declared run instead of counting the
    declared runs as not compared."""
    raw = _raw(("d1", "declared", 2000), ("d2", "declared", 3000), ("m", "measured", 1000))
    assert _size_mix(raw) == _size_mix(raw, {})
    assert (_size_mix(raw).declared, _size_mix(raw).measured, _size_mix(raw).unknown) == (2, 1, 2)
