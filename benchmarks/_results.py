"""Shared by every benchmark: machine description and writing one section of RESULTS.md.

Each benchmark owns the section between ``<!-- BEGIN name -->`` and ``<!-- END name -->``
and rewrites only that, so benchmarks can be rerun one at a time.
"""
from __future__ import annotations

import fcntl
import os
import platform
import shlex
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

RESULTS = Path(__file__).with_name("RESULTS.md")
HEADER = "# Benchmark results\n\nEach section is written by the script it names; rerun that script to refresh it.\n"


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    try:
        java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False).stderr.splitlines()[0]
    except (OSError, IndexError):
        java = "no java"
    return (f"{os.cpu_count()} cores ({cpu}), {mem_gib:.0f} GiB RAM, Python {platform.python_version()}, "
            f"{java}")


def command() -> str:
    return "python " + " ".join(shlex.quote(a) for a in [os.path.relpath(sys.argv[0])] + sys.argv[1:])


def write_section(name: str, body: str) -> None:
    """Replace (or append) this benchmark's section of RESULTS.md, with command, machine and date."""
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    block = (f"<!-- BEGIN {name} -->\n{body.rstrip()}\n\n"
             f"_Command:_ `{command()}` · _machine:_ {machine()} · _run:_ {stamp}\n<!-- END {name} -->")
    RESULTS.touch()
    with open(RESULTS, "r+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        text = f.read() or HEADER
        begin, end = f"<!-- BEGIN {name} -->", f"<!-- END {name} -->"
        if begin in text and end in text:
            pre, rest = text.split(begin, 1)
            post = rest.split(end, 1)[1]
            text = pre + block + post
        else:
            text = text.rstrip() + "\n\n" + block + "\n"
        f.seek(0)
        f.truncate()
        f.write(text)


def publish(name: str, lines: list[str], write: bool = True) -> str:
    """Print a benchmark's lines as its section's body and, unless ``write`` is False (its
    ``--no-write``), put them in RESULTS.md (:func:`write_section`). Returns the body."""
    body = "\n".join(lines)
    print(body)
    if write:
        write_section(name, body)
    return body
