"""Signals of the children the signal tests start."""
from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator


@contextlib.contextmanager
def sighup_as_from_a_terminal() -> Iterator[None]:
    """Start children with SIGHUP's default: a test suite started under ``nohup`` (or any parent
    ignoring SIGHUP) passes that on, and a driver that ignores it, as the sweep and the JVM rightly
    do then, outlived the SIGHUP the test sent it. Set here, in the parent, for the ``Popen``: a
    ``preexec_fn`` is unsafe in a process with threads (the test session's JVM gateway)."""
    before = signal.signal(signal.SIGHUP, signal.SIG_DFL)
    try:
        yield
    finally:
        signal.signal(signal.SIGHUP, before)
