"""The exceptions sparkpredict raises on purpose.

Every error a user can cause derives from :class:`SparkPredictError` and carries a
``fix`` hint; the CLI prints ``error: <message>`` and ``fix: <hint>`` on one line each and
exits with status 2, never a traceback.

Hierarchy::

    SparkPredictError
    ├── InputError            a value the user gave is malformed (sizes, durations, bounds)
    ├── StoreError            the history store is missing, unwritable, foreign or of another schema
    ├── ListenerError         the JVM listener cannot be built or attached
    ├── IngestError           an event log cannot be read at all
    ├── ModelError            a model cannot be fitted or used
    │   ├── DegenerateDataError   too few / too uniform / invalid runs to fit
    │   ├── NotFittedError        predict before fit
    │   └── UnknownJobError       no model or no runs for the job asked about
    └── WorkloadError         an unknown workload or impossible sweep

:class:`Terminated` is no user mistake: a SIGTERM or SIGHUP taken as Ctrl-C is.
"""
from __future__ import annotations


class SparkPredictError(Exception):
    """Base class; ``fix`` says what the user can do about it."""

    def __init__(self, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        return self.message if not self.fix else f"{self.message} (fix: {self.fix})"


class InputError(SparkPredictError, ValueError):
    pass


class StoreError(SparkPredictError):
    pass


class ListenerError(SparkPredictError):
    pass


class IngestError(SparkPredictError):
    pass


class ModelError(SparkPredictError):
    pass


class DegenerateDataError(ModelError, ValueError):
    pass


class NotFittedError(ModelError):
    pass


class UnknownJobError(ModelError, KeyError):
    def __str__(self) -> str:  # KeyError would repr() the message
        return SparkPredictError.__str__(self)


class WorkloadError(SparkPredictError):
    pass


class Terminated(KeyboardInterrupt):
    """Stopped by ``signum`` (SIGTERM, SIGHUP), as a scheduler (Airflow, systemd, Kubernetes)
    stops a task, or a closed terminal: handled as Ctrl-C is, so that what was started is
    stopped and what was half-written removed, not left behind by a process that died at once.
    A KeyboardInterrupt, so every Ctrl-C path takes it; the shell's exit status is 128 + signum."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def print_error(exc: SparkPredictError) -> int:
    """The CLI's way to report a user's mistake: one ``error:`` line, one ``fix:`` line, on
    stderr; returns the exit code, 2."""
    import sys

    print(f"error: {_cut(exc.message)}", file=sys.stderr)
    if exc.fix:
        print(f"fix: {_cut(exc.fix)}", file=sys.stderr)
    return 2


#: Longest error or fix line printed: a 100 KB value echoed in the message reached the terminal
#: whole, twice.
_MOST_CHARS = 2000


def _cut(text: str) -> str:
    """``text``, its middle cut past :data:`_MOST_CHARS` characters (both ends say the most)."""
    if len(text) <= _MOST_CHARS:
        return text
    half = (_MOST_CHARS - 40) // 2
    return f"{text[:half]} … ({len(text) - 2 * half:,} characters cut) … {text[-half:]}"

