"""Bad input to the advice that a review found taken silently, refused after a fit was cached,
or ending in a traceback: each is now one ``error:``/``fix:`` pair (or InputError), exit 2,
nothing written. The store is a copy of tests/data/history; nothing here starts Spark."""
from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import sparkpredict
from sparkpredict.cli import main
from sparkpredict.errors import InputError
from sparkpredict.units import (
    format_amount,
    format_duration,
    format_percent,
    parse_bytes,
    parse_duration,
    parse_memory_mb,
)

HISTORY = Path(__file__).parent / "data" / "history"


@pytest.fixture
def store(tmp_path) -> str:
    shutil.copytree(HISTORY, tmp_path / "store")
    return str(tmp_path / "store")


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _err(capsys) -> tuple[str, str]:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and err[0].startswith("error: ") and err[1].startswith("fix: "), err
    return err[0], err[1]


def _submit(store: str, *extra: str) -> list[str]:
    return ["submit", "--store", store, "--dry-run", "--executors", "auto", "--job", "sort",
            "--input-size", "16MB", *extra, "--", "job.py"]


def _cached(cache: Path) -> list[Path]:
    return [p for p in cache.rglob("*") if p.is_file() and "listener" not in p.parts]


def test_submit_refuses_a_confidence_of_zero_as_suggest_does(store, cache, capsys):
    """`--confidence 0` was read as "not given" (0 is falsy) and advised at 0.9."""
    for value in ("0", "0%", "-0"):
        assert main(_submit(store, "--confidence", value)) == 2
        msg, _ = _err(capsys)
        assert "confidence must lie strictly between 0 and 1" in msg
    assert main(_submit(store, "--confidence", "80%")) == 0
    assert "80% interval" in capsys.readouterr().err


@pytest.mark.parametrize("flag,value,says", [
    ("--price", "-1", "--price must be a positive number"),
    ("--budget", "0", "--budget must be a positive number"),
    ("--confidence", "1.5", "confidence must lie strictly between 0 and 1"),
    ("--objective", "time", None),  # a good value: the fit is cached, as the control
])
def test_submit_checks_the_advice_values_before_its_fit(store, cache, capsys, flag, value, says):
    """The fit (seconds on a large store) ran and was cached before a bad --price was refused."""
    rc = main(_submit(store, flag, value))
    if says is None:
        assert rc == 0 and _cached(cache)
        return
    assert rc == 2 and says in _err(capsys)[0]
    assert _cached(cache) == []


def test_submit_refuses_empty_and_negative_sizes_and_deadlines_as_suggest_does(store, cache, capsys):
    assert main(_submit(store, "--deadline", "")) == 2  # was dropped without a word
    assert "cannot read '' as a duration" in _err(capsys)[0]
    args = ["submit", "--store", store, "--dry-run", "--input-size", "", "--", "job.py"]
    assert main(args) == 2  # was recorded as a run of no declared size
    assert "cannot read '' as a size" in _err(capsys)[0]
    args[args.index("")] = "-5MB"
    assert main(args) == 2
    assert _err(capsys)[0] == "error: size '-5MB' must be positive"
    assert main(_submit(store, "--deadline", "-5m")) == 2
    assert _err(capsys)[0] == "error: duration '-5m' must be positive"
    assert main(["submit", "--store", store, "--dry-run", "--executors", "1.5", "--", "job.py"]) == 2
    assert "is not a whole number" in _err(capsys)[0]
    assert _cached(cache) == []


@pytest.mark.parametrize("kwargs", [
    {"input_bytes": 10**400}, {"deadline_s": 10**400}, {"confidence": 10**400},
    {"price_per_executor_hour": 10**400}, {"budget": 10**400}, {"knee_efficiency": 10**400},
    {"params": {"a": 10**400}}, {"min_executors": np.True_}, {"executor_cores": np.True_},
    {"price_per_executor_hour": np.True_}, {"budget": np.True_}, {"knee_efficiency": np.True_},
    {"executor_counts": [2, np.True_]}, {"objective": np.array(["time"])},
    {"objective": np.array(["cost", "time"])}, {"executor_cores": 2**53 + 1},
    {"executor_memory_mb": 10**20}, {"executor_memory_mb": 0},
])
def test_huge_ints_numpy_bools_and_arrays_are_input_errors_not_tracebacks(store, cache, kwargs):
    args = {"input_bytes": "16MB", **kwargs}
    with pytest.raises(InputError) as e:
        sparkpredict.suggest_executors("sort", args.pop("input_bytes"), store=store, **args)
    assert len(e.value.message) < 200  # a 400-digit number is not echoed whole
    assert _cached(cache) == []


def test_the_messages_name_what_is_wrong():
    with pytest.raises(InputError, match="beyond what Spark counts"):
        parse_bytes("1e400")  # was "not a finite number"
    with pytest.raises(InputError, match="beyond what Spark counts"):
        parse_memory_mb("9999999999999g")  # was "cannot read executor memory"
    with pytest.raises(InputError, match="cannot read executor memory"):
        parse_memory_mb("4x")
    with pytest.raises(InputError, match="is too small: under 450 MiB"):
        sparkpredict.suggest_executors("sort", "16MB", executor_memory_mb=0, store=str(HISTORY))
    with pytest.raises(InputError, match="beyond what spark.executor.cores holds"):
        sparkpredict.suggest_executors("sort", "16MB", executor_cores=99999999999999999, store=str(HISTORY))
    with pytest.raises(InputError, match="price_per_executor_hour 1000.* is too large to be one"):
        sparkpredict.suggest_executors("sort", "16MB", price_per_executor_hour=10**400, store=str(HISTORY))
    with pytest.raises(InputError, match="models is an empty dict"):
        sparkpredict.suggest_executors("sort", "16MB", models={})
    # whole numbers past 2^53, that a float holds only approximately, are taken as they are
    from sparkpredict.advice_args import whole_number

    assert whole_number(2**53 + 1) == 2**53 + 1 and whole_number("99999999999999999") == 99999999999999999
    assert whole_number(np.int64(4)) == 4 and whole_number(4.0) == 4
    assert whole_number(4.5) is None and whole_number(np.True_) is None and whole_number(True) is None
    # more likely slips than counts, though int() or float() reads them
    assert whole_number("1e1") is None and whole_number("1_0") is None and whole_number("\u0664") is None
    assert whole_number(" 4 ") == 4 and whole_number("4.0") == 4
    # sizes too: exact past 2^53, up to the largest 64-bit count; numpy's negatives are negative
    assert parse_bytes(2**53 + 1) == 2**53 + 1 and parse_bytes(2**63 - 1) == 2**63 - 1
    for negative in (np.int64(-5), np.float64(-5.0), -5):
        with pytest.raises(InputError, match="must be positive"):
            sparkpredict.suggest_executors("sort", negative, store=str(HISTORY))
    with pytest.raises(InputError, match="lists no executor count"):
        sparkpredict.suggest_executors("sort", "16MB", executor_counts=[], store=str(HISTORY))


def test_a_duration_writes_each_unit_once_larger_first():
    assert parse_duration("1h30m") == parse_duration("1h 30m") == parse_duration("90m") == 5400
    assert parse_duration("1h30m15s") == 5415 and parse_duration("1m500ms") == 60.5
    for text in ("45m45m", "1h1h", "30m1h", "30s1m"):  # were 90m, 2h, 1h30m, 1m30s
        with pytest.raises(InputError, match="a unit repeats, or a smaller one comes before a larger"):
            parse_duration(text)
    with pytest.raises(InputError, match="'1e400' is too large"):
        parse_duration("1e400")
    with pytest.raises(InputError, match="not a finite number"):
        parse_duration("inf")


def test_a_bare_small_deadline_is_read_as_seconds_with_a_warning(store, cache, capsys):
    base = ["suggest", "--store", store, "--job", "sort", "--input-size", "16MB"]
    assert main([*base, "--deadline", "45"]) == 0
    out = capsys.readouterr().out
    assert "deadline 45.0s" in out and "warning: --deadline 45 has no unit and is read as 45 seconds" in out
    assert main([*base, "--deadline", "45s"]) == 0
    assert "has no unit" not in capsys.readouterr().out
    assert main([*base, "--deadline", "45", "--json"]) == 0
    assert any("--deadline 45 has no unit" in w for w in json.loads(capsys.readouterr().out)["warnings"])


def test_attach_takes_only_true_or_false_for_its_flags(tmp_path):
    from pyspark.sql import SparkSession

    for bad in ({"compact": np.array([True, False])}, {"compact": np.array([True])}, {"compact": 1},
                {"tasks": 1}, {"tasks": "false"}, {"tasks": np.array([True, False])}):
        with pytest.raises(InputError, match="must be True or False"):
            sparkpredict.attach(SparkSession.builder, store=str(tmp_path / "s"), **bad)


def test_amounts_percentages_and_tiny_durations_print_as_what_they_are():
    assert format_amount(1.1e308) == "1.1e308" and format_amount(12345.678) == "12345.68"
    assert format_percent(0.9999) == "99.99%" and format_percent(0.9) == "90%"
    assert format_percent(0.095) == "9.5%" and format_percent(1.0) == "100%"
    assert format_duration(0.001) == "1ms" and format_duration(0.0004) == "0.4ms"
    assert format_duration(0.0499) == "50ms" and format_duration(0.06) == "60ms"  # in order
    assert format_duration(0.0996) == "0.1s" and format_duration(0) == "0.0s"


def _model_dir(tmp_path: Path) -> tuple[Path, str]:
    assert main(["runs", "--store", str(HISTORY), "--out", str(tmp_path / "runs.parquet")]) == 0
    assert main(["fit", str(tmp_path / "runs.parquet"), "--out", str(tmp_path / "m")]) == 0
    index = json.loads((tmp_path / "m" / "sparkpredict_models.json").read_text())
    return tmp_path / "m", index["jobs"]["sort"]


def _thetas(d, path=()):
    if isinstance(d, dict):
        for k, v in d.items():
            yield from ([path + (k,)] if k == "theta" else _thetas(v, path + (k,)))
    elif isinstance(d, list):
        for i, v in enumerate(d):
            yield from _thetas(v, path + (i,))


def _at(d, path):
    for k in path[:-1]:
        d = d[k]
    return d, path[-1]


def test_a_model_file_edited_by_hand_is_refused_when_loaded(tmp_path, cache, capsys):
    """Each loaded field by field and failed at the first prediction: a traceback, or advice of
    an infinite runtime."""
    models, name = _model_dir(tmp_path)
    good = json.loads((models / name).read_text())
    thetas = list(_thetas(good))
    assert thetas

    def cut(d):
        parent, key = _at(d, thetas[-1])
        parent[key] = parent[key][:1]

    def nan(d):
        for t in thetas:
            parent, key = _at(d, t)
            parent[key] = [float("nan")] * len(parent[key])

    edits = {"theta cut short": cut, "theta NaN": nan,
             "unknown component": lambda d: d["component"].update(kind="foo"),
             "defaults emptied": lambda d: d.update(defaults={}),
             "training range zero": lambda d: d.update(training_range={k: [0, 0] for k in d["training_range"]})}
    args = ["suggest", "--models", str(models), "--job", "sort", "--input-size", "16MB", "--deadline", "10s"]
    assert main(args) == 0  # the control: the untouched folder advises
    capsys.readouterr()
    for what, edit in edits.items():
        d = copy.deepcopy(good)
        edit(d)
        (models / name).write_text(json.dumps(d))
        assert main(args) == 2, what
        msg, fix = _err(capsys)
        assert name in msg and "refit" in fix, (what, msg)


def test_a_fraction_of_a_byte_typed_without_a_unit_is_refused(store, capsys):
    """`--input-size 1.5` was stored (edit, submit) or asked about (suggest) as 2 bytes."""
    from sparkpredict.units import declared_size

    base = ["suggest", "--store", store, "--job", "sort", "--input-size", "1.5"]
    assert main(base) == 2
    msg, fix = _err(capsys)
    assert "'1.5' is a fraction of a byte" in msg and "1.5GB" in fix
    run = sparkpredict.store.open(store).runs().run_id.iloc[0]
    assert main(["store", "edit", "--store", store, run, "--input-size", "2.5"]) == 2
    assert "fraction of a byte" in _err(capsys)[0]
    with pytest.raises(InputError, match="fraction of a byte"):
        from pyspark.sql import SparkSession

        sparkpredict.attach(SparkSession.builder, store=store, input_bytes="2.5")
    assert parse_bytes("1.5GB") == 1_500_000_000 and parse_bytes("2") == 2
    assert declared_size("2.5") == 2  # a setting reads as the listener reads it, string for string
