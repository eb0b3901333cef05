"""The advice's words: comparisons in one unit system whose printed ratio is the one a reader
works out; counts, memory, parameters and budgets in human units; a thinned table that says so;
honest lower bounds; option checks whose errors name what the caller typed."""
from __future__ import annotations

import dataclasses
import os
import re
import sys
from pathlib import Path

import pytest

from sparkpredict import suggest_executors
from sparkpredict.advice import beyond_history, candidate_table
from sparkpredict.cli import main
from sparkpredict.cli.suggest import format_advice
from sparkpredict.errors import InputError
from sparkpredict.units import parse_bytes

sys.path.insert(0, os.path.dirname(__file__))
from test_advise import GB, LawModel, advise
from test_advise_history import history

HISTORY = Path(__file__).parent / "data" / "history"
_SIZE = re.compile(r"([0-9.]+) (B|KB|MB|GB|TB|PB|KiB|MiB|GiB|TiB|PiB)\b")
_SCALE = {"B": 1, **{u: 1000 ** (k + 1) for k, u in enumerate(("KB", "MB", "GB", "TB", "PB"))},
          **{u: 1024 ** (k + 1) for k, u in enumerate(("KiB", "MiB", "GiB", "TiB", "PiB"))}}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from sparkpredict.features.runs import runs_table
    from sparkpredict.models.persist import fit_all, save_models

    runs, _ = history()
    d = tmp_path_factory.mktemp("models") / "m"
    save_models(fit_all(runs_table(runs), kind="amdahl"), d)
    return str(d)


@pytest.fixture
def real_history(tmp_path, monkeypatch):
    """The repository's recorded history, its fitted models cached outside it."""
    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    return HISTORY


def _reads_right(sentence: str) -> None:
    """Both sizes of ``A is Rx the runs' largest (B)`` / ``A is 1/R of the runs' smallest (B)``
    are in one unit system, and R is A/B (or B/A) to the digits R shows."""
    (a, ua), (b, ub) = _SIZE.findall(sentence)
    assert (ua.endswith("iB")) == (ub.endswith("iB")), sentence
    m = re.search(r" is (1/)?([0-9.]+)x? (?:the|of the) runs'", sentence)
    assert m, sentence
    va, vb = float(a) * _SCALE[ua], float(b) * _SCALE[ub]
    said = float(m.group(2))
    worked_out = vb / va if m.group(1) else va / vb
    step = 10.0 ** -len(m.group(2).partition(".")[2])
    assert abs(worked_out - said) <= step, (sentence, worked_out)


# ---- 4: one unit system per comparison ----------------------------------------------------------
@pytest.mark.parametrize("asked,lo,hi,want", [
    # sqljoin's sweep: 4-32 MB asked, a few bytes off round as recorded
    ("64MB", 3_998_123, 31_980_456, "input size 64 MB is 2.00x the runs' largest (32.0 MB)"),
    ("1MB", 3_998_123, 31_980_456, "input size 1 MB is 1/4.00 of the runs' smallest (4.00 MB)"),
    # 30 GB against 27.6 GiB read 1.0x, and 30/27.6 = 1.09
    ("30GB", 10**9, 29_635_000_000, "input size 30 GB is 1.01x the runs' largest (29.6 GB)"),
    # a size asked in binary units is compared in them
    ("64MiB", 3_998_123, 31_980_456, "input size 64 MiB is 2.10x the runs' largest (30.5 MiB)"),
])
def test_both_sides_of_a_size_comparison_share_units(asked, lo, hi, want):
    got = beyond_history("input_bytes", parse_bytes(asked), lo, hi)
    assert got == want
    _reads_right(got)


def test_the_recorded_history_reads_in_the_units_asked(real_history):
    # the reviewer's case: "input size 64 MB is 2.0x the runs' largest (30.5 MiB)"
    for size in ("64MB", "1MB"):
        notes = suggest_executors("sqljoin", size, store=real_history).extrapolation_notes()
        assert len(notes) == 1 and "MiB" not in notes[0], notes
        _reads_right(notes[0])


# ---- 5: memory as memory, counts as counts, numbers without %g --------------------------------
def test_memory_counts_and_parameters_read_in_human_units():
    from sparkpredict.units import format_number

    assert beyond_history("executor_memory_mb", 1.5 * 2**20, 1024, 1024) == \
        "executor memory 1.5 TiB is 1536x the runs' largest (1 GiB)"
    assert beyond_history("executors", 24, 1, 8) == "executor count 24 is 3.00x the runs' largest (8)"
    assert beyond_history("executor_cores", 1, 4, 8) == "executor cores 1 is 1/4.00 of the runs' smallest (4)"
    assert beyond_history("observations", 1e9, 1e5, 3e8) == \
        "observations 1e9 is 3.33x the runs' largest (3e8)"
    assert [format_number(x) for x in (1e9, 3e8, 1.5e8, 37.5, 0.5, 0.001, 1e-7, 4.0, 250000)] == \
        ["1e9", "3e8", "1.5e8", "37.5", "0.5", "0.001", "1e-7", "4", "250000"]


def test_the_memory_warning_of_a_far_executor_memory_is_in_memory_units(real_history):
    a = suggest_executors("sort", "16MB", store=real_history, executor_memory_mb=int(1.5 * 2**20))
    notes = [n for n in a.extrapolation_notes() if "memory" in n]
    assert notes == ["executor memory 1.5 TiB is 1536x the runs' largest (1 GiB)"], a.extrapolation_notes()
    # more memory than any run had cannot slow the run: its upper bound stays the runs' 1 GiB's,
    # so no "cannot pin this run down" (the drift had widened it 23x)
    assert not [w for w in a.warnings if "cannot pin" in w], a.warnings
    # less of it can: there the warning names the memory in its units
    b = suggest_executors("sort", "16MB", store=real_history, executor_memory_mb=512, executor_counts=[1])
    assert any("executor memory 512 MiB is 1/2.00 of the runs' smallest (1 GiB)" in n
               for n in b.extrapolation_notes()), b.extrapolation_notes()
    assert not [w for w in a.warnings + b.warnings if "executor_memory_mb" in w or "e+" in w]


def test_budget_and_parameters_in_the_text_have_no_exponent_padding():
    a = advise(objective="cost", max_executors=8, budget=1e-7)
    over = [w for w in a.warnings if "over the budget" in w]
    assert len(over) == 1 and "over the budget 1e-7 executor-h;" in over[0] and "e-07" not in over[0], over
    text = format_advice(dataclasses.replace(a, params={"observations": 1e9, "iterations": 25.0}))
    assert "job parameters: observations=1e9, iterations=25" in text and "e+" not in text


# ---- 9: a thinned table says so; a bound of a few hundredths of a second is not 0.0s -------
def test_a_thinned_table_says_how_many_counts_it_leaves_out():
    a = advise(max_executors=300)
    text = format_advice(a)
    _, rows = candidate_table(a, 40)
    left = len(a.candidates) - len(rows)
    assert left > 0 and f"({left} of {len(a.candidates)} executor counts left out of this table; " \
        "--json lists every one)" in text
    assert "left out" not in format_advice(advise(max_executors=16))


def test_a_lower_bound_near_zero_is_not_printed_as_zero():
    a = advise(max_executors=4)
    tiny = tuple(dataclasses.replace(c, lower_s=1e-4) if c.executors == a.executors else c
                 for c in a.candidates)
    a = dataclasses.replace(a, candidates=tiny, lower_s=1e-4)
    text = format_advice(a)
    assert "0.0s" not in text and "<0.1s - " in text and "interval <0.1s-" in a.summary()
    assert a.to_dict()["lower_s"] == 1e-4  # the model's number itself is kept


# ---- 10: option checks ---------------------------------------------------------------------------
def _cli_error(capsys, *args: str) -> str:
    assert main(["suggest", "--job", "etl", "--input-size", "10GB", *args]) == 2
    return capsys.readouterr().err


def test_a_price_must_be_positive_as_the_message_says(model_dir, capsys):
    err = _cli_error(capsys, "--price", "0", "--models", model_dir)
    assert "error: --price must be a positive number, got 0.0" in err and "fix: give a number above zero" in err
    with pytest.raises(InputError, match="price_per_executor_hour must be a positive number"):
        advise(price_per_executor_hour=0)


@pytest.mark.parametrize("size", ["0", "100k", "1", "449m", "0.5m"])
def test_an_executor_memory_too_small_says_so_and_the_least(model_dir, capsys, size):
    err = _cli_error(capsys, "--executor-memory", size, "--models", model_dir)
    assert f"executor memory {size!r} is too small: under 450 MiB" in err and "cannot read" not in err
    assert "at least 450 MiB" in err


def test_an_executor_memory_from_450_mib_is_advised(model_dir, capsys):
    assert main(["suggest", "--job", "etl", "--input-size", "10GB", "--executor-memory", "450m",
                 "--models", model_dir]) == 0
    with pytest.raises(InputError) as e:
        advise(executor_memory_mb=100)
    assert "executor_memory_mb 100 is too small" in e.value.message and "executor_memory_mb=450" in e.value.fix
    assert "--" not in str(e.value)


def test_a_parameter_given_twice_is_refused_by_name(capsys):
    err = _cli_error(capsys, "--param", "features=5", "--param", "features=10", "--models", "nowhere")
    assert "--param features is given twice (features=5 and features=10)" in err


@pytest.mark.parametrize("kw,arg,flag", [
    ({"min_executors": 2.5}, "min_executors=", None),
    ({"min_executors": 0}, "min_executors=", ("--min-executors", "0")),
    ({"max_executors": 0}, "max_executors=", ("--max-executors", "0")),
    ({"executor_cores": 0}, "executor_cores=", ("--executor-cores", "0")),
    ({"budget": -1}, "budget=", ("--budget", "-1")),
    ({"confidence": 2}, "confidence=", ("--confidence", "2")),
    ({"objective": "cheap"}, "objective=", None),
    ({"min_executors": 4, "max_executors": 2}, "max_executors at least as large as min_executors",
     ("--min-executors", "4", "--max-executors", "2")),
])
def test_errors_name_the_argument_from_python_and_the_flag_from_the_cli(model_dir, capsys, kw, arg, flag):
    with pytest.raises(InputError) as e:
        advise(**kw)
    assert arg in e.value.fix and "--" not in str(e.value), str(e.value)
    if flag is not None:
        err = _cli_error(capsys, *flag, "--models", model_dir)
        assert flag[0] in err.splitlines()[1], err  # the fix line
    # the CLI's names end with its call: the API's next error is in Python's words again
    with pytest.raises(InputError) as again:
        advise(**kw)
    assert str(again.value) == str(e.value)


def test_a_bad_parameter_value_names_params_from_python():
    with pytest.raises(InputError) as e:
        advise(LawModel(), input_bytes=50 * GB, params={"iterations": "lots"})
    assert "params={'iterations': 25}" in e.value.fix and "--param" not in e.value.fix


def test_a_wide_interval_inside_the_history_is_not_blamed_on_extrapolation():
    """16 MB against runs of up to 15.99 MB is 1.00x the largest: not "beyond the history"."""
    from sparkpredict.advise import _wide_interval_warning

    ranges = {"input_bytes": (1e6, 15_999_947.0)}
    inside = _wide_interval_warning(30.0, 0.9, {"input_bytes": 16e6 / 15_999_947 - 1}, ranges,
                                    {"input_bytes": [16e6]}, 0)
    assert inside.endswith("; more runs of the job would narrow it") and "1.00x" not in inside
    beyond = _wide_interval_warning(30.0, 0.9, {"input_bytes": 64e6 / 15_999_947 - 1}, ranges,
                                    {"input_bytes": [64e6]}, 0)
    assert "a run nearer it would narrow the interval" in beyond and "4.00x the runs' largest" in beyond
