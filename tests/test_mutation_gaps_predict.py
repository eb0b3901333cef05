"""Gaps a mutation audit found: a boolean cell in a query (a Parquet column of flags) was named
as the 1 or 0 it counts as, and numpy's booleans passed as 1 executor."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sparkpredict.cli import main
from sparkpredict.cli.predict import check_query

HISTORY = Path(__file__).parent / "data" / "history"
FIX_VALUES = ("write sizes as bytes or with a unit (50MB, 1.5TiB), counts as whole numbers of at least 1 "
              "and job parameters as numbers")
FIX_BOOLEANS = ("a True/False cell is a boolean, no count or size: write the number in its place "
                "(a column saved as booleans holds only True and False)")


# ---- cli/predict.py: boolean cells ---------------------------------------------------------------

@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("predict-booleans")
    assert main(["runs", "--store", str(HISTORY), "--out", str(d / "runs.csv")]) == 0
    assert main(["fit", str(d / "runs.csv"), "--out", str(d / "models")]) == 0
    return d / "models"


def test_a_parquet_querys_boolean_executors_are_named_as_booleans_with_a_fix(models, tmp_path, capsys):
    """A Parquet column of booleans reaches the reader as True/False: said "executors 1 is not a
    whole number of at least 1", which named a good count as the bad one."""
    q = tmp_path / "q.parquet"
    pd.DataFrame({"job": ["sort", "sort"], "input_bytes": [8000000, 16000000],
                  "executors": [True, False]}).to_parquet(q)
    out = tmp_path / "p.csv"
    capsys.readouterr()
    assert main(["predict", str(models), str(q), "--out", str(out)]) == 2
    assert not out.exists()
    assert capsys.readouterr().err == (
        "error: 2 of 2 query rows cannot be predicted (rows counted below the header):\n"
        "  row 1: executors True is a boolean, not a number\n"
        "  row 2: executors False is a boolean, not a number\n"
        f"fix: {FIX_VALUES}; {FIX_BOOLEANS}\n")


def _one(col: str, cell: object) -> tuple[list[str], bool]:
    """What check_query says of one ``col`` cell (the required columns otherwise good)."""
    q = {"job": ["sort"], "input_bytes": [8000000], "executors": [2]}
    q[col] = pd.Series([cell], dtype=object)
    _, problems = check_query(pd.DataFrame(q), {"sort"})
    return problems.rows.get(0, []), problems.booleans


@pytest.mark.parametrize("col, cell, said", [
    ("input_bytes", True, "input_bytes True is a boolean, not a size"),
    ("executors", True, "executors True is a boolean, not a number"),
    ("executors", False, "executors False is a boolean, not a number"),
    ("executor_cores", False, "executor_cores False is a boolean, not a number"),
    ("executor_memory_mb", True, "executor_memory_mb True is a boolean, not a number"),
    # numpy's boolean (an object column built in Python) was read as 1 executor, no error at all
    ("executors", np.True_, "executors True is a boolean, not a number"),
    ("executor_cores", np.True_, "executor_cores True is a boolean, not a number"),
])
def test_every_count_and_size_column_names_a_boolean_as_one(col, cell, said):
    assert _one(col, cell) == ([said], True)


def test_a_boolean_in_a_parameter_column_of_numbers_is_named_so_and_other_bad_cells_get_no_boolean_fix():
    q = pd.DataFrame({"job": ["sort"] * 2, "input_bytes": [8000000] * 2, "executors": [2, 0],
                      "iterations": pd.Series([True, 5], dtype=object)})
    _, problems = check_query(q, {"sort"})
    assert problems.rows == {0: ["iterations True is a boolean, not a number"],
                             1: ["executors 0 is not a whole number of at least 1"]}
    assert problems.error(2, {"sort"}).fix == f"{FIX_VALUES}; {FIX_BOOLEANS}"
    # no boolean anywhere: the general fix alone
    assert _one("executors", 0) == (["executors 0 is not a whole number of at least 1"], False)
    _, plain = check_query(q.iloc[1:], {"sort"})
    assert plain.error(1, {"sort"}).fix == FIX_VALUES

