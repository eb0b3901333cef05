"""Java properties files as spark-submit loads them (``spark-defaults.conf``, ``--properties-file``).

``java.util.Properties.load`` rules: ``key value``, ``key=value`` or ``key: value``; ``#`` and
``!`` comments; a line ending in an odd number of backslashes continues on the next; escapes
(``\\t``, ``\\uXXXX``). Spark then trims each value (``Utils.trimExceptCRLF``).
"""
from __future__ import annotations

import re
from pathlib import Path

_PROPERTY_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.DOTALL)
_PROPERTY_SPACE = " \t\f"
# Spark trims every value it loads from a properties file this way (Utils.trimExceptCRLF).
_TRIMMED = "".join(chr(c) for c in range(33) if c not in (10, 13))


def _unescape(text: str) -> str:
    def one(m: re.Match[str]) -> str:
        e = m.group(1)
        return chr(int(e[1:], 16)) if len(e) == 5 else {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(e, e)
    return _PROPERTY_ESCAPE.sub(one, text)


def _property(line: str) -> tuple[str, str]:
    """(key, value) of one logical line, split as java.util.Properties splits it: the key ends
    at the first unescaped ``=``, ``:`` or blank; one ``=`` or ``:`` may follow blanks."""
    i, n = 0, len(line)
    while i < n and line[i] not in "=:" and line[i] not in _PROPERTY_SPACE:
        i += 2 if line[i] == "\\" else 1
    i = min(i, n)
    j = i
    while j < n and line[j] in _PROPERTY_SPACE:
        j += 1
    if j < n and line[j] in "=:":
        j += 1
    while j < n and line[j] in _PROPERTY_SPACE:
        j += 1
    return _unescape(line[:i]), _unescape(line[j:]).strip(_TRIMMED)


def read_properties(path: str) -> dict[str, str]:
    """A properties file as spark-submit loads it (java.util.Properties, UTF-8); {} if unreadable."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    props: dict[str, str] = {}
    logical: str | None = None
    for natural in re.split(r"\r\n|\r|\n", text):
        line = natural.lstrip(_PROPERTY_SPACE)
        if logical is None:
            if not line or line[0] in "#!":
                continue  # a comment ends at its line, even after a backslash
            logical = ""
        if (len(line) - len(line.rstrip("\\"))) % 2:  # an odd trailing backslash continues it
            logical += line[:-1]
            continue
        key, value = _property(logical + line)
        props[key] = value
        logical = None
    if logical:
        key, value = _property(logical)
        props[key] = value
    return props


def property_line(key: str, value: str) -> str:
    """``key  value`` as a properties file line that :func:`read_properties` (and Spark's
    java.util.Properties) read back as ``value``: backslashes escaped (a trailing one would join
    the next line to this one), and a leading blank, which the format strips, escaped too."""
    v = value.replace("\\", "\\\\")
    return f"{key}  " + ("\\" + v if v[:1] in _PROPERTY_SPACE and v else v)


__all__ = ["property_line", "read_properties"]
