import pytest

from sparkpredict.errors import InputError
from sparkpredict.units import (
    format_bytes,
    format_duration,
    parse_bytes,
    parse_duration,
)


@pytest.mark.parametrize("text,expected", [
    ("300GB", 300 * 10**9), ("1.5TiB", int(1.5 * 2**40)), ("64MB", 64 * 10**6),
    ("512 MiB", 512 * 2**20), ("1024", 1024), (2048, 2048), ("1e3KB", 10**6),
])
def test_parse_bytes(text, expected):
    assert parse_bytes(text) == expected


@pytest.mark.parametrize("text,expected", [
    ("45m", 2700), ("1h30m", 5400), ("90s", 90), ("250ms", 0.25), ("120", 120), ("2h", 7200),
])
def test_parse_duration(text, expected):
    assert parse_duration(text) == pytest.approx(expected)


@pytest.mark.parametrize("bad", ["-5GB", "0", "abc", "12XB", "", "nan"])
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
    assert format_duration(5400) == "1h30m"
    assert format_duration(42.25) == "42.2s"
