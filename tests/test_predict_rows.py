"""`sparkpredict predict` names every bad query row at once, writes nothing unless told to skip
them, and writes sizes as whole bytes (models fitted on the test history: sort, sqljoin and
wordcount at 4-32 MB on 1-3 executors)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from sparkpredict.cli import main
from sparkpredict.cli.predict import MAX_LISTED_ROWS, predict_table
from sparkpredict.errors import InputError
from sparkpredict.models.persist import load_models

HISTORY = Path(__file__).parent / "data" / "history"
FIX_VALUES = ("write sizes as bytes or with a unit (50MB, 1.5TiB), counts as whole numbers of at least 1 "
              "and job parameters as numbers")
FIX_JOB = ("fit 'nosuchjob' first (`sparkpredict fit RUNS --out DIR`) or check the job name "
           "(known jobs: sort, sqljoin, wordcount)")


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("predict-rows")
    assert main(["runs", "--store", str(HISTORY), "--out", str(d / "runs.csv")]) == 0
    assert main(["fit", str(d / "runs.csv"), "--out", str(d / "models")]) == 0
    return d / "models"


def _predict(models: Path, tmp_path: Path, csv: str, *extra: str) -> tuple[int, Path]:
    (tmp_path / "q.csv").write_text(csv)
    out = tmp_path / "p.csv"
    return main(["predict", str(models), str(tmp_path / "q.csv"), "--out", str(out), *extra]), out


GOOD = "job,input_bytes,executors\nsort,64000000,2\nsort,8000000,2\nsort,16000000,3\n"


@pytest.mark.parametrize("row, said", [
    ("sort,-1,2", "input_bytes -1 is not a size above zero"),
    ("sort,0,2", "input_bytes 0 is not a size above zero"),
    ("sort,,2", "input_bytes is empty or NaN"),
    ("sort,-1MB,2", "input_bytes '-1MB' is not a size above zero"),
    ("sort,16000000,", "executors is empty or NaN"),
    ("sort,16000000,0", "executors 0 is not a whole number of at least 1"),
    ("sort,16000000,-2", "executors -2 is not a whole number of at least 1"),
    ("sort,16000000,2.5", "executors 2.5 is not a whole number of at least 1"),
])
def test_a_bad_row_of_plain_numbers_is_named_with_its_value(models, tmp_path, capsys, row, said):
    capsys.readouterr()
    rc, out = _predict(models, tmp_path, GOOD + row + "\n")
    assert rc == 2 and not out.exists()
    assert capsys.readouterr().err == (f"error: query row 4 below the header: {said}\n"
                                       f"fix: {FIX_VALUES}; or pass --skip-bad-rows to predict the 3 other rows\n")


NINE = ("job,input_bytes,executors\n"
        "sort,64000000,2\n"       # 1
        "nosuchjob,8000000,2\n"   # 2: unknown job
        "sort,-5,3\n"             # 3: negative size
        "sort,,2\n"               # 4: empty size
        "sort,16000000,\n"        # 5: empty executor count
        "sort,16000000,2.5\n"     # 6: fractional executors
        "wordcount,1e9,2\n"       # 7
        "nosuchjob,-3,0\n"        # 8: three problems in one row
        "sqljoin,8000000,3\n")    # 9
NINE_ROWS = ("  row 2: no model for job 'nosuchjob'\n"
             "  row 3: input_bytes -5 is not a size above zero\n"
             "  row 4: input_bytes is empty or NaN\n"
             "  row 5: executors is empty or NaN\n"
             "  row 6: executors 2.5 is not a whole number of at least 1\n"
             "  row 8: no model for job 'nosuchjob'; input_bytes -3 is not a size above zero; "
             "executors 0 is not a whole number of at least 1\n")


def test_every_bad_row_is_listed_in_one_error_and_nothing_is_written(models, tmp_path, capsys):
    capsys.readouterr()
    rc, out = _predict(models, tmp_path, NINE)
    assert rc == 2 and not out.exists()
    assert capsys.readouterr().err == (
        "error: 6 of 9 query rows cannot be predicted (rows counted below the header):\n" + NINE_ROWS
        + f"fix: {FIX_JOB}; {FIX_VALUES}; or pass --skip-bad-rows to predict the 3 other rows\n")


def test_a_long_list_of_bad_rows_is_cut_at_the_cap(models, tmp_path, capsys):
    n = MAX_LISTED_ROWS + 5
    capsys.readouterr()
    rc, out = _predict(models, tmp_path, "job,input_bytes,executors\n" + "sort,-1,2\n" * n + "sort,8MB,2\n")
    assert rc == 2 and not out.exists()
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == f"error: {n} of {n + 1} query rows cannot be predicted (rows counted below the header):"
    assert lines[1:-2] == [f"  row {i}: input_bytes -1 is not a size above zero" for i in range(1, 21)]
    assert lines[-2:] == ["  and 5 more rows",
                          f"fix: {FIX_VALUES}; or pass --skip-bad-rows to predict the 1 other row"]


def test_skip_bad_rows_predicts_the_good_rows_and_lists_the_skipped(models, tmp_path, capsys):
    capsys.readouterr()
    rc, out = _predict(models, tmp_path, NINE, "--skip-bad-rows")
    assert rc == 0
    got = pd.read_csv(out)
    assert got[["job", "input_bytes", "executors"]].values.tolist() == [
        ["sort", 64000000, 2], ["wordcount", 1000000000, 2], ["sqljoin", 8000000, 3]]
    stdout, err = capsys.readouterr()
    assert stdout == f"wrote 3 predictions to {out}\n"
    assert err.startswith("warning: skipped 6 of 9 query rows that cannot be predicted (rows counted "
                          "below the header):\n" + NINE_ROWS), err
    # the far row is named by its line in the query (7), not in the output (2)
    assert "warning: 2 of 3 predicted rows extrapolate beyond the runs the models were fitted on (furthest: " \
           "row 7 below the header, job wordcount: input size 1 GB" in err, err
    # the same predictions as a query of the good rows alone
    (tmp_path / "alone").mkdir()
    rc, alone = _predict(models, tmp_path / "alone", "job,input_bytes,executors\nsort,64000000,2\n"
                         "wordcount,1e9,2\nsqljoin,8000000,3\n")
    assert rc == 0
    pd.testing.assert_frame_equal(got, pd.read_csv(alone))


def test_skip_bad_rows_with_no_good_row_is_an_error_and_writes_nothing(models, tmp_path, capsys):
    capsys.readouterr()
    rc, out = _predict(models, tmp_path, "job,input_bytes,executors\nsort,-1,2\nnosuchjob,8MB,2\n",
                       "--skip-bad-rows")
    assert rc == 2 and not out.exists()
    assert capsys.readouterr().err == (
        "error: 2 of 2 query rows cannot be predicted (rows counted below the header):\n"
        "  row 1: input_bytes -1 is not a size above zero\n  row 2: no model for job 'nosuchjob'\n"
        f"fix: {FIX_JOB}; {FIX_VALUES}\n")


def test_sizes_are_written_as_whole_bytes_however_given(models, tmp_path, capsys):
    rc, out = _predict(models, tmp_path, "job,input_bytes,executors\nsort,1e9,2\nsort,1GiB,2\n")
    assert rc == 0
    assert [line.split(",")[1] for line in out.read_text().splitlines()] == ["input_bytes", "1000000000", "1073741824"]
    rc, out = _predict(models, tmp_path, "job,input_bytes,executors\nsort,1e9,2\nsort,2.5e7,3.0\n")
    assert rc == 0
    assert [line.split(",")[1:3] for line in out.read_text().splitlines()[1:]] == [["1000000000", "2"],
                                                                                 ["25000000", "3"]]


def test_predict_table_names_the_bad_rows_to_api_users_too(models):
    query = pd.DataFrame({"job": ["sort", "sort", "other"], "input_bytes": [8e6, float("nan"), 8e6],
                          "executors": [2, 2, 2]})
    with pytest.raises(InputError) as err:
        predict_table(load_models(models, jobs=["sort"]), query)
    assert err.value.message == ("2 of 3 query rows cannot be predicted (rows counted below the header):\n"
                                 "  row 2: input_bytes is empty or NaN\n  row 3: no model for job 'other'")
    assert err.value.fix == f"fit 'other' first (`sparkpredict fit RUNS --out DIR`) or check the job name " \
                            f"(known jobs: sort); {FIX_VALUES}"


def test_help_explains_extrapolation_and_skip_bad_rows(capsys):
    with pytest.raises(SystemExit):
        main(["predict", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert ("extrapolation says how far the row lies beyond the runs its model was fitted on, in its "
            "furthest column (input size, executor count, ...): 0 within their range, 0.5 for 50 % "
            "beyond it") in text
    assert "--skip-bad-rows predict the good rows and list the bad ones on stderr" in text
