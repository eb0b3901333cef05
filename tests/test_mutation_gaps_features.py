"""Rules of the units parsers and of the runs table at their boundaries, where the other tests
checked values well inside them: each test here failed on a one-operator change of the rule it
pins (a mutation audit of sparkpredict/units.py and sparkpredict/features/runs.py).
"""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from sparkpredict.errors import InputError
from sparkpredict.features.runs import (
    check_job_column,
    check_runs_frame,
    executors_and_cores,
    local_run_executors,
    no_runs_error,
    read_runs_file,
    runs_table,
    with_integer_columns,
)
from sparkpredict.units import (
    format_amount,
    format_bytes,
    format_bytes_in,
    format_duration,
    format_number,
    format_percent,
    is_bool,
    not_negative,
    parse_bytes,
    parse_duration,
    parse_memory_mb,
    parse_user_bytes,
    shown,
    unitless_duration_warning,
    unitless_size_warning,
)


def test_every_name_of_a_duration_unit_reads_as_its_length():
    # the table's long names were read by no test: "2 hours" was, "2 hour" not
    assert {t: parse_duration(t) for t in (
        "2secs", "2 second", "2 seconds", "2mins", "2 minute", "2hrs", "2 hour", "2 day", "2 days")} == {
        "2secs": 2, "2 second": 2, "2 seconds": 2, "2mins": 120, "2 minute": 120,
        "2hrs": 7200, "2 hour": 7200, "2 day": 172800, "2 days": 172800}


def test_whole_sizes_from_python_are_read_exactly_from_one_byte_to_the_64_bit_limit():
    assert parse_bytes(1) == 1
    # an int past 2^53 read through a float had lost its last bytes
    assert parse_bytes(2**62 + 1) == 2**62 + 1 and parse_bytes(2**63 - 1) == 2**63 - 1
    for bad in (0, 2**63):
        with pytest.raises(InputError):
            parse_bytes(bad)


def test_a_flag_is_no_size_or_duration():
    for flag in (True, False):
        with pytest.raises(InputError, match="cannot read"):
            parse_bytes(flag)
        with pytest.raises(InputError, match="cannot read"):
            parse_duration(flag)
    # numpy's flags are no bool, and are flags all the same; its numbers are not
    assert is_bool(np.True_) and is_bool(np.bool_(False)) and is_bool(True)
    assert not is_bool(1) and not is_bool(np.int64(1)) and not is_bool(np.float64(0.0)) and not is_bool("true")


def test_a_readable_size_below_zero_is_called_negative_not_unreadable():
    for text in ("-5MB", " -1.5 TiB", "-3"):
        with pytest.raises(InputError, match="must be positive"):
            parse_bytes(text)
    with pytest.raises(InputError, match="cannot read"):
        parse_bytes("-5 megs")


def test_nan_and_infinity_given_from_python_are_not_finite_sizes_or_durations():
    for v in (math.nan, math.inf, np.float64("inf")):
        with pytest.raises(InputError, match="not a finite number"):
            parse_bytes(v)
        with pytest.raises(InputError, match="not a finite number"):
            parse_duration(v)
    # written in digits, a number too large is that, not a NaN or an infinity given
    with pytest.raises(InputError, match="beyond what Spark counts"):
        parse_bytes("1e400")
    with pytest.raises(InputError, match="too large"):
        parse_duration("1e400")
    # and one below zero is that: negative, as -5 is (was "not a finite number")
    for v in (-10**400, "-1e400"):
        with pytest.raises(InputError, match="must be positive"):
            parse_duration(v)
    with pytest.raises(InputError, match="too large"):
        parse_duration(10**400)


def test_a_size_typed_without_a_unit_must_be_whole_bytes():
    assert parse_user_bytes("1024") == 1024 and parse_user_bytes("1.5KB") == 1500
    assert parse_user_bytes("2e3") == 2000 and parse_user_bytes(" 7 b ") == 7
    with pytest.raises(InputError, match="fraction of a byte") as e:
        parse_user_bytes("1.5")
    assert "1.5GB" in e.value.fix
    with pytest.raises(InputError, match="fraction of a byte"):
        parse_user_bytes("2.5B")


def test_anything_after_a_minus_is_negative_and_zero_is_left_to_the_parsers():
    for text in ("-5 megs", " -x", -5, -0.5):
        with pytest.raises(InputError, match="size .* must be positive"):
            not_negative("size", text, "64MB")
    for text in (0, "0", "5MB", True, None):
        not_negative("size", text, "64MB")


def test_a_bare_size_is_suspect_below_a_million_bytes_only():
    w = unitless_size_warning(" 300 ", "--input-size")
    assert w is not None and w.startswith("--input-size 300 has no unit") and "300GB" in w
    assert unitless_size_warning("999999", "--input-size") is not None
    for quiet in ("1000000", "0", "300GB", "300b", "oops", 300):
        assert unitless_size_warning(quiet, "--input-size") is None, quiet


def test_a_bare_deadline_is_suspect_below_two_minutes_only():
    w = unitless_duration_warning(" 45 ", "--deadline")
    assert w is not None and w.startswith("--deadline 45 has no unit") and "45m" in w
    assert unitless_duration_warning("119", "--deadline") is not None
    for quiet in ("120", "0", "45m", "soon", 45):
        assert unitless_duration_warning(quiet, "--deadline") is None, quiet


def test_executor_memory_of_exactly_the_least_is_enough():
    assert parse_memory_mb("1m") == 1
    assert parse_memory_mb("450m", min_mb=450) == 450
    with pytest.raises(InputError, match="too small: under 450 MiB, the least Spark starts"):
        parse_memory_mb("449m", min_mb=450)


def test_sizes_print_to_three_significant_digits_up_to_the_64_bit_limit():
    # the largest byte count a store holds stays in petabytes (there is no unit after them)
    assert format_bytes_in(2**63 - 1, False) == "9223 PB" and format_bytes(2**63 - 1) == "8192 PiB"
    assert format_bytes(1_126_000) == "1.13 MB"  # not 1.126 MB
    assert format_bytes(100_371_234) == "100 MB"  # not 100.4 MB
    # within half a byte of 12.48 KiB is round to two decimals, 0.52 bytes off is not
    assert format_bytes_in(12779, True) == "12.5 KiB"
    # a size that is no number is written without a unit
    assert (format_bytes(math.inf), format_bytes(math.nan)) == ("inf B", "nan B")


def test_a_duration_under_a_tenth_of_a_second_is_written_in_milliseconds():
    assert [format_duration(s) for s in (0.25, 0.09945, 0.0042, 0.0005, 0.0)] == \
        ["0.2s", "99ms", "4.2ms", "0.5ms", "0.0s"]


def test_a_number_that_is_not_finite_is_written_as_python_writes_it():
    assert [format_number(x) for x in (math.inf, -math.inf, math.nan)] == ["inf", "-inf", "nan"]


def test_an_amount_of_a_billion_is_written_short():
    assert [format_amount(x) for x in (1e9, 999_999_999.0, math.inf)] == ["1e9", "999999999.00", "inf"]


def test_a_share_just_short_of_all_is_not_written_100_percent():
    assert [format_percent(f) for f in (1.0, 0.9999, 0.99991, 0.846)] == ["100%", "99.99%", "99.99%", "84.6%"]


def test_an_echoed_value_is_cut_only_past_its_limit():
    assert shown("x" * 58) == repr("x" * 58)  # 60 characters: whole
    assert shown("x" * 59) == "'" + "x" * 29 + "…" + "x" * 29 + "'"


def test_a_store_without_succeeded_runs_says_what_its_runs_are_when_it_has_some():
    plain = no_runs_error("S")
    assert str(plain).startswith("store S holds no succeeded runs") and "sparkpredict sweep" in plain.fix
    told = no_runs_error("S", pd.DataFrame({"run_id": ["a", "b"], "status": ["failed", "excluded"]}))
    assert "holds no succeeded runs: 1 run failed, 1 is excluded" in str(told)
    assert "store edit b --include" in told.fix
    # rows of which one succeeded, or none at all: nothing to say about them
    for rows in (pd.DataFrame({"run_id": ["a", "b"], "status": ["failed", "succeeded"]}),
                 pd.DataFrame({"run_id": [], "status": []})):
        e = no_runs_error("S", rows)
        assert (str(e), e.fix) == (str(plain), plain.fix)


def test_a_standalone_run_that_held_one_executor_counts_one():
    runs = pd.DataFrame({"master": ["spark://head:7077", "spark://head:7077"],
                         "executors_requested": [3.0, 3.0], "executors_max": [1.0, 0.0],
                         "executor_cores": [2.0, 2.0]})
    # held 1: that is its count; held none (a row without the count): what it asked for
    assert list(executors_and_cores(runs)[0]) == [1.0, 3.0]


def test_a_dynamic_allocation_run_that_held_under_one_executor_on_average_counts_its_mean():
    da = '{"spark.dynamicAllocation.enabled": "true"}'
    runs = pd.DataFrame({"master": ["yarn", "yarn"], "executors_requested": [2.0, 2.0],
                         "executors_max": [3.0, 3.0], "executors_mean": [0.5, 0.0],
                         "executor_cores": [4.0, 4.0], "properties_json": [da, da]})
    # most of the run without an executor: 0.5 on average; a mean of 0 is none recorded
    assert list(executors_and_cores(runs)[0]) == [0.5, 2.0]
    assert list(executors_and_cores(runs, dynamic_mean=False)[0]) == [2.0, 2.0]


def test_a_local_star_run_on_one_core_reads_its_one_recorded_thread():
    runs = pd.DataFrame({"master": ["local[*]", "local[*]"], "executors_requested": [4.0, 4.0],
                         "executors_max": [1.0, 1.0], "task_slots": [1.0, float("nan")],
                         "executor_cores": [float("nan")] * 2})
    execs, cores = executors_and_cores(runs)
    # its threads were resolved at run time (1); unrecorded, local[*] says nothing
    assert list(execs) == [1.0, 4.0] and cores[0] == 1.0


def test_a_local_run_without_recorded_threads_reads_them_from_its_master():
    nan = float("nan")
    runs = pd.DataFrame({"master": ["local", "local[1]", "local[3]", "local[3]"],
                         "executors_requested": [4.0, 3.0, 1.0, 1.0], "executors_max": [1.0] * 4,
                         "task_slots": [nan, nan, nan, 0.0], "executor_cores": [nan] * 4})
    # local is one thread, local[N] N; a recorded 0 is no count of threads
    assert list(executors_and_cores(runs)[0]) == [1.0, 1.0, 3.0, 3.0]


def test_a_local_runs_settings_given_parsed_are_read_as_given_in_text():
    settings = {"spark.executor.instances": "2", "spark.executor.cores": "2"}
    assert local_run_executors("local[4]", 1.0, 4.0, settings) == (2.0, 2.0)
    assert local_run_executors("local[4]", 1.0, 4.0, json.dumps(settings)) == (2.0, 2.0)
    assert local_run_executors("local[4]", 1.0, 4.0) == (4.0, 1.0)


def test_declared_parameters_become_columns_except_names_a_runs_table_has():
    def props(**params):
        return json.dumps({f"spark.sparkpredict.param.{k}": v for k, v in params.items()})

    raw = pd.DataFrame({
        "run_id": ["a", "b", "c"], "job": ["j"] * 3, "status": ["succeeded"] * 3,
        "wall_ms": [1000, 2000, 3000], "input_bytes": [10, 20, 30],
        "executors_requested": [2, 2, 2], "executor_cores": [1, 1, 1],
        "properties_json": [props(scale="10", executors="99", **{"1st": "5"}), props(scale="2.5", rate="x"),
                            '["spark.sparkpredict.param.scale"]'],
    })
    t = runs_table(raw)
    # a name a runs table has (executors) or no word (1st) is no parameter; NaN where undeclared
    assert list(t["executors"]) == [2.0, 2.0, 2.0] and "1st" not in t
    assert t["scale"].tolist()[:2] == [10.0, 2.5] and math.isnan(t["scale"][2])
    assert t["rate"].isna().all()


def test_exported_integer_columns_keep_the_stores_width_up_to_its_limit():
    df = pd.DataFrame({"executor_cores": [4.0, 2.0**31 - 1], "task_slots": [4.0, 2.0**31],
                       "executors": [2.0, 4.0], "scale": [1.5, 2.0], "empty": [math.nan] * 2,
                       "input_bytes": [math.nan] * 2})
    types = {c: str(t) for c, t in with_integer_columns(df).dtypes.items()}
    assert types == {"executor_cores": "Int32", "task_slots": "Int64", "executors": "float64",
                     "scale": "float64", "empty": "float64", "input_bytes": "Int64"}
    # for CSV: every whole-valued column too, but no empty one the store does not type
    types = {c: str(t) for c, t in with_integer_columns(df, whole_valued=True).dtypes.items()}
    assert types["executors"] == "Int64" and types["scale"] == "float64" and types["empty"] == "float64"


HEADER = "job,input_bytes,executors,executor_cores,executor_memory_mb,runtime_s\n"


def test_a_runs_file_without_run_ids_numbers_its_rows_from_zero_and_drops_whole_copies(tmp_path, caplog):
    # its made-up run ids had made every copy a run of its own: a fold's test rows then held
    # copies of its training rows
    path = tmp_path / "runs.csv"
    path.write_text(HEADER + "j,100,2,1,1024,10\nj,100,2,1,1024,10\nj,200,4,1,1024,12\n")
    t = read_runs_file(path)
    assert list(t["run_id"]) == ["row-0", "row-1"] and list(t["input_bytes"]) == [100.0, 200.0]
    assert list(t.columns)[:2] == ["run_id", "job"]  # as a runs table's columns start
    assert "1 row(s)" in caplog.text and "repeat an earlier row whole" in caplog.text


def test_a_runs_file_without_a_job_column_is_said_to_lack_it(tmp_path):
    path = tmp_path / "runs.csv"
    path.write_text(HEADER.replace("job,", "") + "100,2,1,1024,10\n")
    with pytest.raises(InputError, match=r"lacks column\(s\) job \(has: input_bytes"):
        read_runs_file(path)


def test_only_job_names_with_blanks_around_them_are_warned_of(tmp_path, caplog):
    path = tmp_path / "runs.csv"
    path.write_text(HEADER + "j,100,2,1,1024,10\n")
    assert list(read_runs_file(path)["job"]) == ["j"] and "blanks" not in caplog.text
    path.write_text(HEADER + "j ,100,2,1,1024,10\n")
    assert list(read_runs_file(path)["job"]) == ["j"] and "'j ' of" in caplog.text


def test_rows_without_a_job_are_named_ten_at_most():
    with pytest.raises(InputError, match=r"rows 2, 3 below the header: job is empty"):
        check_job_column(pd.DataFrame({"job": ["a", math.nan, None]}), "runs")
    with pytest.raises(InputError) as ten:
        check_job_column(pd.DataFrame({"job": [""] * 10}), "runs")
    assert "rows 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 below" in str(ten.value)
    with pytest.raises(InputError) as eleven:
        check_job_column(pd.DataFrame({"job": [""] * 11}), "runs")
    assert "rows 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 ... below" in str(eleven.value)


def test_cells_that_are_no_number_are_named_five_at_most():
    def frame(n):
        return pd.DataFrame({"job": ["j"] * n, "input_bytes": ["x"] * n, "executors": [1] * n,
                             "executor_cores": [1] * n, "executor_memory_mb": [1] * n, "runtime_s": [1] * n})

    with pytest.raises(InputError) as five:
        check_runs_frame(frame(5))
    assert "row 5: input_bytes 'x'" in str(five.value) and "more)" not in str(five.value)
    with pytest.raises(InputError) as six:
        check_runs_frame(frame(6))
    assert "row 5: input_bytes 'x' (and 1 more)" in str(six.value)
    assert "second header line" not in str(six.value)


def test_a_second_header_line_is_named_as_such(tmp_path):
    path = tmp_path / "runs.csv"
    path.write_text(HEADER + "j,100,2,1,1024,10\n" + HEADER + "j,200,4,1,1024,12\n")
    with pytest.raises(InputError, match="a second header line"):
        read_runs_file(path)
