import pytest

from sparkpredict.errors import InputError
from sparkpredict.units import (
    declared_size,
    format_bytes,
    format_duration,
    format_executor_hours,
    format_executors,
    parse_bytes,
    parse_duration,
    plural,
    spark_size,
)


@pytest.mark.parametrize("text,expected", [
    ("300GB", 300 * 10**9), ("1.5TiB", int(1.5 * 2**40)), ("64MB", 64 * 10**6),
    # a bare letter as Spark reads it (spark.sparkpredict.inputBytes=120g is 120 GiB to the listener)
    ("120g", 120 * 2**30), ("512m", 512 * 2**20), ("2k", 2048),
    ("512 MiB", 512 * 2**20), ("1024", 1024), (2048, 2048), ("1e3KB", 10**6),
])
def test_parse_bytes(text, expected):
    assert parse_bytes(text) == expected


@pytest.mark.parametrize("text,expected", [
    ("45m", 2700), ("1h30m", 5400), ("90s", 90), ("250ms", 0.25), ("120", 120), ("2h", 7200),
    # the longer names of a unit: a regex that tried "s" before "sec" refused these
    ("5min", 300), ("2hr", 7200), ("10sec", 10), ("2 hours", 7200), ("1d", 86400), ("3 minutes 5 s", 185),
])
def test_parse_duration(text, expected):
    assert parse_duration(text) == pytest.approx(expected)


@pytest.mark.parametrize("bad", ["-5GB", "0", "abc", "12XB", "", "nan", "0.4", "1e300", "10000PB"])
def test_bad_sizes_name_the_fix(bad):
    with pytest.raises(InputError) as e:
        parse_bytes(bad)
    assert e.value.fix


@pytest.mark.parametrize("bad", ["-45m", "soon", "0s", "1h-30m", "inf"])
def test_bad_durations_name_the_fix(bad):
    with pytest.raises(InputError) as e:
        parse_duration(bad)
    assert e.value.fix


def test_formatting():
    assert format_bytes(1536) == "1.5 KiB"
    # a round size reads back as typed, in its units; any other in decimal ones, three digits
    assert [format_bytes(parse_bytes(t)) for t in ("30GB", "1.5TB", "64MB", "2 KB", "300GB")] == \
        ["30 GB", "1.5 TB", "64 MB", "2 KB", "300 GB"]
    assert [format_bytes(b) for b in (2**30, 15_999_947, 1024, 1000 * 2**20, 999, 1_999_987)] == \
        ["1 GiB", "16.0 MB", "1 KiB", "1000 MiB", "999 B", "2.00 MB"]
    assert [format_bytes(parse_bytes(t)) for t in ("1PiB", "2PB")] == ["1 PiB", "2 PB"]
    assert format_duration(5400) == "1h30m"
    assert format_duration(42.25) == "42.2s"
    # at the unit boundaries the rounding carries into the larger unit, and past an hour the
    # duration rounds to the nearest minute (it had been cut: 1h00m50s printed 1h00m)
    assert [format_duration(s) for s in (59.94, 59.97, 3599.4, 3599.6, 3629, 3631, 3650, 7199.9)] == \
        ["59.9s", "1m00s", "59m59s", "1h00m", "1h00m", "1h01m", "1h01m", "2h00m"]
    # an interval's bound far outside the history can be years: two digits, not twelve
    assert [format_duration(s) for s in (9999 * 3600, 10_000 * 3600, 5.3e14)] == ["9999h00m", "1.0e4h", "1.5e11h"]


def test_small_costs_and_counts_read_right():
    # a demo-sized run costs a fraction of a thousandth of an executor-hour: "0.00" hid it
    assert [format_executor_hours(h) for h in (5.094, 0.1, 0.0457, 0.000712, 0.0)] == \
        ["5.09", "0.10", "0.046", "0.00071", "0.00"]
    # one column, two significant digits throughout: 0.0030 beside 0.0037, not 0.003
    assert [format_executor_hours(h) for h in (0.0023, 0.003, 0.02, 0.028, 2e-5)] == \
        ["0.0023", "0.0030", "0.020", "0.028", "2.0e-5"]
    assert (plural(1, "executor"), plural(3, "executor"), plural(0, "executor")) == \
        ("1 executor", "3 executors", "0 executors")
    # store summary and the report write counts alike; `:.3g` had written 1200 as 1.2e+03
    assert [format_executors(x) for x in (4, 4.0, 2.4321, 1.0889, 999.4, 999.7, 1200, 1234.5, float("nan"))] == \
        ["4", "4", "2.43", "1.09", "999", "1000", "1200", "1234", "-"]


def test_spark_size_strings_read_as_spark_reads_them():
    assert [spark_size(t) for t in ("128m", "1g", "512mb", "4GiB", "2k", "512", " 3 t ")] == \
        [2**27, 2**30, 2**29, 2**32, 2048, 512, 3 * 2**40]
    assert spark_size("1g", "m") == 2**30 and spark_size("1024", "m") == 2**30  # bare = the unit
    assert spark_size("oops") is None and spark_size(None) is None and spark_size("5 apples") is None
    # beyond a 64-bit size column: not a size (the listener refuses the same strings)
    assert spark_size("8192p") is None and spark_size(str(2**63)) is None
    assert spark_size(str(2**63 - 1024)) == 2**63 - 1024 and spark_size("8191p") == 8191 * 2**50


def test_executor_memory_reads_as_spark_executor_memory():
    from sparkpredict.units import parse_memory_mb

    # `sweep --executor-memory 4096` was 4096 *bytes* (refused as under 256 MiB) and 4g 3814 MiB
    assert [parse_memory_mb(t) for t in ("4g", "4gb", "4GiB", "4096", "1.5G", "512m")] == \
        [4096, 4096, 4096, 4096, 1536, 512]
    for bad in ("lots", "0.5m", "inf", ""):
        with pytest.raises(InputError):
            parse_memory_mb(bad)


#: spark.sparkpredict.inputBytes strings and their bytes: --input-size's reading (KB..PB decimal,
#: KiB..PiB and Spark's bare k..p binary, a bare number bytes); None: not a size. The listener's
#: reader (ListenerSettings.declaredSize) is checked against declared_size on the same strings by
#: tests/test_ingest_listener.py.
DECLARED = {
    "1MB": 10**6, "5MB": 5 * 10**6, "300GB": 300 * 10**9, "300gb": 300 * 10**9, " 7 mb ": 7 * 10**6,
    "2kb": 2000, "10Tb": 10 * 10**12, "1.5 GB": 15 * 10**8, "8PB": 8 * 10**15,
    "1MiB": 2**20, "4GiB": 4 * 2**30, "5 kib": 5 * 2**10, "1.5TiB": 3 * 2**39,
    "1m": 2**20, "1.5g": 3 * 2**29, "120g": 120 * 2**30, "2k": 2048, "3 t": 3 * 2**40, "8p": 8 * 2**50,
    "1024": 1024, "1000000": 10**6, "12b": 12, "1e3": 1000, "1.5e3KB": 1_500_000, ".5k": 512,
    "2.5": 2, "3.5": 4, "0.5": None,  # whole bytes, half to even (Java's Math.rint)
    str(2**63 - 1024): 2**63 - 1024, "8191p": 8191 * 2**50, "8192p": None, str(2**63): None, "1e300PB": None,
    "0": None, "-1": None, "1.": None, "g": None, "": None, "1,5g": None, "3ib": None, "12 x": None,
    "1e999": None, "5 apples": None, "120g   # declared size": None, "5\u212a": None,  # a Kelvin sign
}


def test_a_declared_size_reads_as_input_size_reads_it():
    """spark.sparkpredict.inputBytes=5MB was 5,242,880 bytes (Spark's binary reading) while
    --input-size 5MB, attach(input_bytes="5MB") and sweeps stored 5,000,000: one size, two
    byte counts, and suggest --input-size 300GB asked about a size 7% off the runs declared so."""
    assert {t: declared_size(t) for t in DECLARED} == DECLARED
    assert all(declared_size(t) == parse_bytes(t) for t, n in DECLARED.items() if n is not None)
    assert declared_size(None) is None and declared_size(True) is None and declared_size(2048) == 2048
