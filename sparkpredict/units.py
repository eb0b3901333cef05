"""Human units in and out: ``300GB``, ``1.5TiB``, ``45m``, ``1h30m``."""
from __future__ import annotations

import datetime
import itertools
import math
import numbers
import re

from .errors import InputError

#: ``KB``..``PB`` decimal, ``KiB``..``PiB`` binary; a bare letter (``120g``) binary, as Spark reads
#: ``spark.executor.memory``. ``--input-size``, ``input_bytes=`` and ``spark.sparkpredict.inputBytes``
#: (:func:`declared_size`, and the listener's ``ListenerSettings.declaredSize``) all read sizes
#: with this table: one string, one size everywhere
_BYTE_UNITS = {
    "": 1, "b": 1,
    "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4, "pb": 1000**5,
    "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4, "p": 1024**5,
    "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4, "pib": 1024**5,
}
_SPARK_SIZE = re.compile(r"\s*([0-9]*\.?[0-9]+)\s*(?:([kmgtp])(?:i?b)?|(b))?\s*", re.IGNORECASE)
#: Spark's byte counts, and the store's ``*_bytes`` columns, are signed 64-bit integers
_MAX_BYTES = 2**63 - 1
# ASCII only, as the listener's Java pattern: in Unicode mode IGNORECASE lets [a-z] match the
# Kelvin sign, whose lower() is "k"
_SIZE_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([a-z]*)\s*$", re.IGNORECASE | re.ASCII)
_DUR_S = {"ms": 0.001, "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
          "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
          "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600, "d": 86400, "day": 86400, "days": 86400}
# Longest names first: a regex alternation takes the first that matches, and "s" would stop
# "sec" at its first letter, leaving "ec" unread.
_DUR_PART = re.compile(r"([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*(" + "|".join(sorted(_DUR_S, key=len, reverse=True)) + ")",
                       re.IGNORECASE)


def parse_bytes(text: str | float) -> int:
    """Parse a size such as ``300GB`` (decimal) or ``1.5TiB`` (binary) into bytes.

    >>> parse_bytes("1.5KiB")
    1536
    """
    if isinstance(text, numbers.Integral) and not is_bool(text):
        # as it is, not through a float: one holds whole numbers exactly only up to 2^53
        n = int(text)
        if n <= 0:
            raise InputError(f"size {shown(text)} must be positive", "give a size above zero, e.g. 64MB")
        if n > _MAX_BYTES:
            raise InputError(f"size {shown(text)} is beyond what Spark counts (8 EiB: a 64-bit byte count)",
                             "give the input size in bytes or with a unit, e.g. 300GB")
        return n
    if isinstance(text, numbers.Real) and not is_bool(text):
        value = float(text)
        unit = ""
        written = False
    else:
        m = _SIZE_RE.match(str(text))
        negative = _SIZE_RE.match(str(text).strip()[1:]) if str(text).strip().startswith("-") else None
        if negative and negative.group(2).lower() in _BYTE_UNITS:
            # a size with a unit, below zero: "-5MB" is readable, only not a size
            raise InputError(f"size {text!r} must be positive", "give a size above zero, e.g. 64MB")
        if not m or m.group(2).lower() not in _BYTE_UNITS:
            raise InputError(f"cannot read {text!r} as a size",
                             "write a number with a unit, e.g. 300GB, 512MiB or 1.5TiB")
        value, unit = float(m.group(1)), m.group(2).lower()
        written = True  # digits ("1e400"): a number too large, not a NaN or an infinity given
    if math.isnan(value) or (math.isinf(value) and not written):
        raise InputError(f"size {shown(text)} is not a finite number", "give a size above zero, e.g. 64MB")
    if value <= 0:
        raise InputError(f"size {text!r} must be positive", "give a size above zero, e.g. 64MB")
    scaled = value * _BYTE_UNITS[unit]
    # 1e300PB is finite, its bytes are not: beyond 2^63 either way (round(inf) would raise)
    n = int(round(scaled)) if scaled <= _MAX_BYTES else _MAX_BYTES + 1
    if n < 1:
        raise InputError(f"size {text!r} is less than one byte", "give a size of at least 1 byte, e.g. 64MB")
    if n > _MAX_BYTES:
        raise InputError(f"size {shown(text)} is beyond what Spark counts (8 EiB: a 64-bit byte count)",
                         "give the input size in bytes or with a unit, e.g. 300GB")
    return n


def is_bool(value: object) -> bool:
    """``True``/``False``, numpy's included (``np.True_`` is no ``bool``): a flag passed where a
    number belongs, which ``int()`` and ``float()`` would read as 1 or 0."""
    t = type(value)
    return isinstance(value, bool) or (t.__module__ == "numpy" and t.__name__ in ("bool_", "bool"))


def _float_or_inf(value: float) -> float:
    """``float(value)``; an int too large for a float is infinite (with its sign)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def parse_user_bytes(text: str | float) -> int:
    """:func:`parse_bytes` of a size a user typed, refusing a fraction of a byte (``1.5``, which
    was stored as 2 bytes: a unit forgotten, most likely), and saying of whatever starts with a
    minus that it is negative (the parser says so of a readable size, ``-5MB``, only). Not
    :func:`declared_size`, which reads a setting as the listener does, string for string."""
    not_negative("size", text, "64MB")
    m = _SIZE_RE.match(text) if isinstance(text, str) else None
    if m and m.group(2).lower() in ("", "b"):
        value = float(m.group(1))
        if math.isfinite(value) and not value.is_integer():
            raise InputError(f"size {shown(text)} is a fraction of a byte",
                             f"write its unit (e.g. {m.group(1)}GB or {m.group(1)}MiB), or whole bytes")
    return parse_bytes(text)


def not_negative(what: str, text: object, example: str) -> None:
    """Refuse a negative size or duration as such, whatever follows the minus: the parsers'
    "cannot read" (of ``-5 megs``, or of ``-5m`` to the size parser) would hide what is wrong."""
    if isinstance(text, str) and text.strip().startswith("-") or (
            isinstance(text, numbers.Real) and not is_bool(text) and text < 0):
        raise InputError(f"{what} {shown(text)} must be positive", f"give a {what} above zero, e.g. {example}")


#: Below this, a size typed without a unit is more likely a count of GB or MB left bare than bytes.
UNITLESS_SUSPECT_BYTES = 10**6


def unitless_size_warning(text: object, flag: str) -> str | None:
    """A warning for a size typed as a bare number that small (``--input-size 300``): it is read
    as bytes, as Spark reads a bare byte count, but is far more likely 300 GB with the unit
    forgotten. None for a size with a unit, a number given from Python, or a large byte count."""
    if not isinstance(text, str):
        return None
    m = _SIZE_RE.match(text)
    if not m or m.group(2) or not 0 < float(m.group(1)) < UNITLESS_SUSPECT_BYTES:
        return None
    n = m.group(1)
    return (f"{flag} {text.strip()} has no unit and is read as {n} bytes; if you meant {n}GB or "
            f"{n}MiB, write the unit (a byte count is written {n}B)")


#: Below this, a deadline typed without a unit is more likely minutes than seconds.
UNITLESS_SUSPECT_S = 120


def unitless_duration_warning(text: object, flag: str) -> str | None:
    """A warning for a duration typed as a small bare number (``--deadline 45``): read as
    seconds, but more likely 45 minutes with the unit forgotten. None for a duration with a
    unit, a number given from Python, or a bare number of seconds that large."""
    if not isinstance(text, str):
        return None
    n = text.strip()
    try:
        seconds = float(n)
    except ValueError:
        return None
    if not 0 < seconds < UNITLESS_SUSPECT_S:
        return None
    return (f"{flag} {n} has no unit and is read as {n} seconds; if you meant {n}m, write the unit "
            f"(seconds are written {n}s)")


def declared_size(text: object) -> int | None:
    """``spark.sparkpredict.inputBytes`` in bytes, read as ``--input-size`` reads sizes
    (:func:`parse_bytes`: ``5MB`` is 5,000,000 bytes, ``5MiB`` and ``5m`` are 5 * 2^20); None when
    ``text`` is not a size above zero. Not Spark's byte strings (there ``5mb`` is 5 MiB): a size
    declared in a conf, to ``submit --input-size`` or to ``attach(input_bytes=)`` is stored as the
    same bytes, and ``suggest --input-size`` asks about that size. The listener's
    ``ListenerSettings.declaredSize`` reads the key this way, string for string."""
    if text is None or isinstance(text, bool):
        return None
    try:
        return parse_bytes(str(text))
    except InputError:
        return None


def spark_size(text: object, unit: str = "b") -> int | None:
    """A size as Spark reads its byte strings (``JavaUtils.byteStringAs``): ``128m``, ``1g``,
    ``512mb``, ``4GiB`` are binary, a bare number is in ``unit`` (``"b"``, ``"k"``, ``"m"``, ...);
    None when ``text`` is not one, or is 2^63 bytes or more (beyond a 64-bit size column). For
    Spark's own size settings read from a run's recorded properties (``spark.executor.memory``);
    a declared input size is read by :func:`declared_size`."""
    m = _SPARK_SIZE.fullmatch(str(text)) if text is not None else None
    if not m:
        return None
    # "512b" is bytes whatever the bare-number unit, as Spark reads it
    letter = m.group(2) or ("" if m.group(3) else unit.rstrip("b"))
    scale = 1024 ** " kmgtp".index((letter or " ").lower())
    size = float(m.group(1)) * scale
    return int(round(size)) if size < 2**63 else None


def spark_size_has_fraction(text: object) -> bool:
    """Whether ``text`` is a size :func:`spark_size` reads that is written with a fraction
    (``1.5g``), which Spark itself refuses (``JavaUtils``: "Fractional values are not supported")."""
    m = _SPARK_SIZE.fullmatch(str(text)) if text is not None else None
    return m is not None and "." in m.group(1)


#: Spark refuses to start an executor with less memory than this (``UnifiedMemoryManager``:
#: 1.5 x its 300 MiB of reserved memory, "Executor memory ... must be at least 471859200"), so
#: advice for a smaller executor describes a run that cannot happen.
MIN_EXECUTOR_MEMORY_MB = 450


def parse_memory_mb(text: str | float, min_mb: int = 1) -> int:
    """Executor memory as ``spark.executor.memory`` reads it, in MiB: ``4g``, ``4gb``, ``4GiB``
    -> 4096; a bare number is MiB. At least ``min_mb`` MiB: a size that reads but is smaller is
    "too small", not unreadable."""
    v = spark_size(text, "m")
    if v is None and text is not None and _SPARK_SIZE.fullmatch(str(text)):
        raise InputError(f"executor memory {shown(text)} is beyond what Spark counts (8 EiB: a 64-bit byte count)",
                         "give one executor's memory, e.g. 4g, 512m or 4096 (MiB)")
    if v is None:
        raise InputError(f"cannot read executor memory {shown(text)}", "write e.g. 4g, 512m or 4096 (MiB)")
    if v < min_mb * 2**20:
        why = (", the least Spark starts an executor with" if min_mb == MIN_EXECUTOR_MEMORY_MB
               else "")
        raise InputError(f"executor memory {text!r} is too small: under {min_mb} MiB{why}",
                         f"give at least {min_mb} MiB, e.g. 4g, 512m or 4096 (MiB)")
    return int(round(v / 2**20))


def parse_duration(text: str | float) -> float:
    """Parse a duration such as ``45m``, ``1h30m``, ``90s`` or a bare number of seconds.

    Each unit at most once, the larger first (``1h30m``): ``45m45m`` or ``30m1h`` is more likely
    a slip than 90 minutes."""
    if isinstance(text, datetime.timedelta):  # driver code's own type for a duration
        text = text.total_seconds()
    written = isinstance(text, numbers.Integral) and not is_bool(text)
    if isinstance(text, numbers.Real) and not is_bool(text):
        seconds = _float_or_inf(text)
    else:
        s = str(text).strip().lower().replace(" ", "")
        try:
            seconds = float(s)
            written = bool(re.fullmatch(r"[0-9.e+-]+", s))  # "1e400", not "inf" or "nan"
        except ValueError:
            parts = _DUR_PART.findall(s)
            if not parts or "".join(a + b for a, b in parts) != s:
                raise InputError(f"cannot read {shown(text)} as a duration",
                                 "write e.g. 45m, 1h30m, 90s or a number of seconds") from None
            scales = [_DUR_S[b] for _, b in parts]
            if any(a <= b for a, b in itertools.pairwise(scales)):
                raise InputError(f"cannot read {shown(text)} as a duration: a unit repeats, or a smaller "
                                 "one comes before a larger", "write each unit once, the larger first, "
                                 "e.g. 1h30m or 45m")
            seconds = sum(float(a) * _DUR_S[b] for a, b in parts)
            written = True
    # written in digits, an infinity is a number too large for a float (-1e400 is negative)
    if math.isnan(seconds) or (math.isinf(seconds) and not written):
        raise InputError(f"duration {shown(text)} is not a finite number",
                         "give a duration above zero, e.g. 45m (no deadline: leave it out)")
    if seconds <= 0:
        raise InputError(f"duration {shown(text)} must be positive", "give a duration above zero, e.g. 45m")
    if seconds == math.inf:
        raise InputError(f"duration {shown(text)} is too large", "give a duration such as 45m, 1h30m or 2d")
    return seconds


#: A point in time as ``store edit --before/--after`` reads it: an ISO date, or a date and time
#: (``T`` or a blank between them) to the minute, second or a fraction of one (of any digits:
#: some tools write nanoseconds), with an offset (``Z``, ``+02:00``) or none, which is UTC, as
#: ``store summary`` lists start times.
_TIME_RE = re.compile(r"^\s*(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)"
                      r"\s*(Z|[+-]\d{2}:?\d{2})?)?\s*$", re.IGNORECASE | re.ASCII)
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
#: The epoch ms of the first and last millisecond a date can name (years 1 to 9999, UTC)
_FIRST_MS = (datetime.datetime(1, 1, 1, tzinfo=datetime.timezone.utc) - _EPOCH) // datetime.timedelta(milliseconds=1)
_LAST_MS = (datetime.datetime.max.replace(tzinfo=datetime.timezone.utc) - _EPOCH) // datetime.timedelta(milliseconds=1)
_TIME_FIX = "write an ISO date or date and time, e.g. 2026-12-01 or 2026-12-01T03:00:00Z (UTC unless an offset is given)"


def parse_time(text: str | datetime.datetime | datetime.date) -> int:
    """Epoch milliseconds of a time given as an ISO date (``2026-12-01``: its midnight) or date
    and time (``2026-12-01T03:00``, ``2026-12-01 03:00:00.5``), UTC unless an offset is given
    (``Z``, ``+02:00``), as ``store summary`` lists start times and a run's ``start_ms`` counts
    them. A ``datetime`` without a time zone is UTC too, a ``date`` its midnight.

    A bare number is refused rather than read as epoch seconds or milliseconds (one is 1000x the
    other), and so is a date without its day or with a month 13."""
    frac = ""
    if isinstance(text, datetime.datetime):
        when = text
    elif isinstance(text, datetime.date):
        when = datetime.datetime(text.year, text.month, text.day)
    elif isinstance(text, str):
        m = _TIME_RE.match(text)
        if not m:
            raise InputError(f"cannot read {shown(text)} as a time", _TIME_FIX)
        day, clock, zone = m.groups()
        # by hand, not fromisoformat: Python 3.10's reads a fraction of 3 or 6 digits only
        y, mo, d = (int(v) for v in day.split("-"))
        hms, _, frac = (clock or "").partition(".")
        h, mi, sec = ([int(v) for v in hms.split(":")] + [0, 0, 0])[:3] if hms else (0, 0, 0)
        try:
            when = datetime.datetime(y, mo, d, h, mi, sec)
        except ValueError:
            raise InputError(f"{shown(text)} is no time (a month, day, hour or minute out of range)",
                             _TIME_FIX) from None
        if zone:
            z = zone.upper().replace(":", "")
            if z == "Z":
                when = when.replace(tzinfo=datetime.timezone.utc)
            else:
                hours, minutes = int(z[1:3]), int(z[3:5])
                if hours > 23 or minutes > 59:
                    raise InputError(f"{shown(text)} has no such offset ({zone})", _TIME_FIX)
                sign = -1 if z[0] == "-" else 1
                when = when.replace(tzinfo=datetime.timezone(sign * datetime.timedelta(hours=hours, minutes=minutes)))
    else:
        raise InputError(f"cannot read {shown(text)} as a time", _TIME_FIX)
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    # exactly, in integers, then up to the millisecond: a start (whole ms) is before a time
    # exactly when it is before the time's next ms (.0004 rounded down had left out a run at .000)
    us = (when - _EPOCH) // datetime.timedelta(microseconds=1)
    if frac:  # a string's fraction, of however many digits
        us = us * 10 ** len(frac) + int(frac) * 10 ** 6
        ms = -(-us // 10 ** (len(frac) + 3))
    else:
        ms = -(-us // 1000)
    if not _FIRST_MS <= ms <= _LAST_MS:
        # a date's years end at 9999: an offset or a fraction past them is no time a run started
        raise InputError(f"{shown(text)} lies outside the years 1 to 9999 in UTC",
                         "give a time from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z")
    return ms


def format_time(ms: float, ms_precision: bool = False) -> str:
    """Epoch milliseconds as ISO UTC that :func:`parse_time` reads back: ``2026-12-01T03:00:00Z``
    (``...03:00:00.250Z`` with ``ms_precision``)."""
    if not (isinstance(ms, numbers.Real) and math.isfinite(ms) and _FIRST_MS <= ms < _LAST_MS + 1):
        return f"{ms} epoch ms (no date)"  # a store's garbage, said rather than raised
    # floored to a whole ms first, in integers: seconds and ms of one instant (the float
    # timestamp had rounded 1999.9999 ms up to second 2, and printed it 00:00:02.999)
    whole = math.floor(ms)
    when = _EPOCH + datetime.timedelta(milliseconds=whole)
    # the year by hand: strftime's %Y writes year 1 as "1", which parse_time cannot read
    out = f"{when.year:04d}-" + when.strftime("%m-%dT%H:%M:%S")
    return out + (f".{whole % 1000:03d}Z" if ms_precision else "Z")


def format_bytes(n: float) -> str:
    """A size as every command writes it: decimal units (``30 GB``, ``16.0 MB``), as sizes are
    typed (``--input-size 300GB``) and as ``store summary`` lists them, except a round number of
    binary units (``8 MiB``, ``1.5 TiB``: what a user typed that way, or a Spark setting), which
    decimal would blur. One rule for all, so one run's size reads the same in ``explain``,
    ``report``, ``suggest`` and ``store summary``."""
    return format_bytes_in(n, byte_units_of(n))


def byte_units_of(n: float) -> bool:
    """True when ``n`` reads as binary units (``64MiB``, ``1.5TiB``: a round number of them and
    not of decimal ones), False for decimal ones: what a user typed (``64MB``), and any other
    size, since ``--input-size 300GB`` is how sizes are asked for."""
    return not _round_in(n, 1000) and _round_in(n, 1024)


def _round_in(n: float, base: int) -> bool:
    k = _unit_index(n, base)
    return k > 0 and any(abs(round(n / base**k, d) * base**k - n) < 0.5 for d in (0, 1, 2))


def _unit_index(n: float, base: int) -> int:
    k = 0
    while k < 5 and abs(n) >= base ** (k + 1):
        k += 1
    return k


def format_bytes_in(n: float, binary: bool) -> str:
    """``n`` in one unit system, so that two sizes printed side by side compare as printed:
    ``binary`` KiB..PiB, else KB..PB. A round amount reads as typed (``64 MB``, ``1.5 TiB``);
    any other keeps three significant digits (``32.0 MB``, ``27.6 GiB``)."""
    n = float(n)
    base = 1024 if binary else 1000
    names = ("KiB", "MiB", "GiB", "TiB", "PiB") if binary else ("KB", "MB", "GB", "TB", "PB")
    k = _unit_index(n, base) if math.isfinite(n) else 0
    if k == 0:
        return f"{n:.0f} B"
    scaled = n / base**k
    for digits in (0, 1, 2):
        if abs(round(scaled, digits) * base**k - n) < 0.5:
            return f"{scaled:.{digits}f} {names[k - 1]}"
    digits = 2 if scaled < 10 else 1 if scaled < 100 else 0
    if round(scaled, digits) >= base and k < 5:  # 999.96 MB: 1.00 GB, not "1000 MB"
        k, scaled, digits = k + 1, scaled / base, 2
    return f"{scaled:.{digits}f} {names[k - 1]}"


def format_number(x: float) -> str:
    """A count, job parameter or budget in advice text: six significant digits, plain from
    0.0001 to below a million (``37.5``, ``250000``, ``0.001``), beyond that in the short form
    ``--param`` and ``--budget`` read back (``1e9``, ``1.5e8``, ``1e-7``), never ``1e+09``."""
    if not math.isfinite(x):
        return str(x)
    return _short_exponent(f"{x:.6g}")


def format_executors(x: float) -> str:
    """An executor count as tables write it: a whole count whole (``4``, ``1200``), a dynamic-
    allocation run's mean to three significant digits (``2.43``, ``1.09``; ``1235`` past a
    thousand, never ``1.23e+03``), ``-`` for none recorded."""
    if not math.isfinite(x):
        return "-"
    if float(x).is_integer() or abs(x) >= 999.5:  # 999.5 in 3 digits is 1e+03
        return f"{x:.0f}"
    return f"{x:.3g}"


def _short_exponent(s: str) -> str:
    """``1e+09`` -> ``1e9``, ``2.8e-05`` -> ``2.8e-5``."""
    mantissa, e, exp = s.partition("e")
    return s if not e else f"{mantissa}e{int(exp)}"


#: From this many hours on, a duration is written in hours to two significant digits.
_HOURS_IN_FULL = 10_000


def format_duration(seconds: float) -> str:
    """``5400`` -> ``1h30m``; ``42.3`` -> ``42.3s``; ``5.3e14`` -> ``1.5e11h``.

    Past an hour the duration is rounded to the minute (``3650`` -> ``1h01m``)."""
    if not math.isfinite(seconds):
        return "inf"
    ms = seconds * 1000
    if 0 < ms < 99.5:  # "0.0s" reads as no time at all (a deadline of 1ms was printed so)
        return f"{_short_exponent(f'{ms:.2g}')}ms" if ms < 10 else f"{ms:.0f}ms"
    if round(seconds, 1) < 60:  # 59.97 s is "1m00s", not "60.0s"
        return f"{seconds:.1f}s"
    if seconds >= _HOURS_IN_FULL * 3600:
        # far outside any history an interval's bound can be years: "1.5e11h", not 12 digits
        return f"{_short_exponent(f'{seconds / 3600:#.2g}')}h"
    if round(seconds) >= 3600:
        # past an hour, to the nearest minute: seconds there are noise no run repeats
        h, m = divmod(int(round(seconds / 60.0)), 60)
        return f"{h}h{m:02d}m"
    m, s = divmod(int(round(seconds)), 60)
    return f"{m}m{s:02d}s"


def format_amount(x: float) -> str:
    """``0.4567`` -> ``0.46``; small amounts keep two significant digits (``0.00071``, ``0.020``),
    not ``0.00``; from a billion on, three in the short exponent form (``1.11e308``), not 300
    digits."""
    if not math.isfinite(x):
        return "inf"
    if abs(x) >= 1e9:
        return _short_exponent(f"{x:.3g}")
    # two significant digits below 0.1, trailing zero kept, so a column reads alike: 0.020 0.028
    return f"{x:.2f}" if abs(x) >= 0.1 or x == 0 else _short_exponent(f"{x:#.2g}")


def format_executor_hours(hours: float) -> str:
    """A cost in executor-hours (:func:`format_amount`)."""
    return format_amount(hours)


#: No cluster has more executors than this: a larger count is a slip of the keyboard, and a
#: range up to it ("1-100000000") was expanded count by count until memory ran out.
MAX_EXECUTORS = 1_000_000
#: Counts one list may hold (``sweep``/``simulate --executors``, ``suggest --executor-counts``):
#: each is a run or a replay or a row; ``suggest --min/--max-executors`` thins a wider range.
MAX_LISTED_COUNTS = 10_000


class CountLimitError(InputError):
    """A count, or a list of counts, larger than :data:`MAX_EXECUTORS` or :data:`MAX_LISTED_COUNTS`."""


def check_count_limit(value: int, what: str = "executor count") -> None:
    """Refuse ``value`` above :data:`MAX_EXECUTORS` (:class:`CountLimitError`, naming the limit)."""
    if value > MAX_EXECUTORS:
        digits = str(value)
        shown = f"{value:,}" if len(digits) <= 30 else f"{digits[:6]}…{digits[-6:]} ({len(digits)} digits)"
        raise CountLimitError(f"{what} {shown} is more executors than any cluster has (at most {MAX_EXECUTORS:,})",
                         "give a count a cluster can run, e.g. 64")


#: The end of a too-long list's fix, which only ``suggest`` can take: ``simulate`` and ``sweep``
#: have no such options (they parse with ``wide_fix=False``).
WIDE_RANGE_FIX = "; suggest thins a wide range itself: give --min-executors and --max-executors instead"


def parse_counts(text: str, wide_fix: bool = True) -> list[int]:
    """``"1,2,4"`` or ``"1-3,8"`` -> executor counts, in the order written, each at least 1: the
    one syntax of every command's list of counts (``sweep --executors``, ``suggest
    --executor-counts``, ``simulate --executors``), at most :data:`MAX_LISTED_COUNTS` of them,
    none above :data:`MAX_EXECUTORS`. ``wide_fix``: a too-long list's fix points at suggest's
    --min-executors/--max-executors."""
    items = [t.strip() for t in str(text).split(",")]
    if not any(items):
        raise InputError("empty list of executor counts", "give a comma-separated list, e.g. 1,2,3 or 1-4")
    if not all(items):
        # "1,,2" is more likely a value lost while editing than a stray comma: ask, do not guess
        raise InputError(f"the list of executor counts {text!r} has an empty item",
                         f"write one value between each two commas, e.g. {','.join(t for t in items if t)}")
    out: list[int] = []
    for t in items:
        m = re.fullmatch(r"(\d+)(?:\s*-\s*(\d+))?", t)
        if not m:
            raise InputError(f"cannot read {t!r} as an executor count", "write e.g. 1,2,3 or 1-4")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi < lo:
            raise InputError(f"{t!r} is an empty range of executor counts", f"write the smaller count first: {hi}-{lo}")
        check_count_limit(hi)
        if len(out) + hi - lo + 1 > MAX_LISTED_COUNTS:
            raise CountLimitError(f"the list of executor counts {shown(text)} holds {len(out) + hi - lo + 1:,} counts, "
                             f"more than the {MAX_LISTED_COUNTS:,} one list may hold",
                             f"list fewer counts (e.g. 1,2,4,8,16,32){WIDE_RANGE_FIX if wide_fix else ''}")
        out.extend(range(lo, hi + 1))
    if any(e < 1 for e in out):
        raise InputError(f"executor counts must be at least 1, got {min(out)}", "write e.g. 1,2,3")
    return out


def shown(value: object, most: int = 60) -> str:
    """``repr(value)``, cut in the middle past ``most`` characters: an error line echoes what
    was given, not 100 KB of it."""
    r = repr(value)
    return r if len(r) <= most else f"{r[:most // 2]}…{r[-(most // 2):]}"


def format_percent(fraction: float) -> str:
    """A fraction as a percentage in up to three digits: ``0.1`` -> ``10%``, ``0.095`` ->
    ``9.5%``, ``0.846`` -> ``84.6%``; rounded to a whole percent, a threshold of 9.5 % read as
    10 % and was both exceeded and not beside the 10 % one."""
    text = f"{fraction * 100:.3g}"
    if text == "100" and fraction < 1:  # 0.9999 is not 100 %: as many digits as tell them apart
        text = next(t for d in range(4, 18) if (t := f"{fraction * 100:.{d}g}") != "100")
    return f"{text}%"


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """``1, "executor"`` -> ``1 executor``; ``3, "executor"`` -> ``3 executors``; ``13504, "task"``
    -> ``13,504 tasks`` (grouped, as the warnings beside such counts write them); ``nouns`` for
    a plural other than noun + s (``"batches"``)."""
    return f"{n} {noun}" if n == 1 else f"{n:,} {nouns or noun + 's'}"
