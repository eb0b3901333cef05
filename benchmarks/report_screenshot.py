"""Render the HTML report of the committed history in headless Chromium and keep a screenshot.

Writes the report of ``tests/data/history`` (or ``--store``) to a temporary file, opens it
in headless Chromium (Debian's ``chromium`` package) and saves ``benchmarks/report_screenshot.png``.
It then checks the screenshot is not blank: the plots must put many distinct colours on the
page. Also records how long the report took to build.

    python benchmarks/report_screenshot.py [--store S] [--height 2600]
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _results import write_section

REPO = HERE.parent
PNG = HERE / "report_screenshot.png"


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("no chromium found: apt-get install -y chromium")


def screenshot(html: Path, png: Path, width: int, height: int) -> float:
    """Headless Chromium screenshot of ``html``; returns seconds taken."""
    with tempfile.TemporaryDirectory(prefix="sp-chromium-") as profile:
        cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={profile}", "--hide-scrollbars", f"--window-size={width},{height}",
               f"--screenshot={png}", html.as_uri()]
        t = time.monotonic()
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)
        if r.returncode != 0 or not png.is_file():
            sys.exit(f"chromium failed ({r.returncode}): {r.stderr[-2000:]}")
        return time.monotonic() - t


def colours(png: Path) -> tuple[int, float]:
    """Distinct colours and the fraction of non-white pixels: a blank page has ~1 and ~0."""
    import matplotlib.image as mpimg
    import numpy as np

    img = (mpimg.imread(png)[..., :3] * 255).astype(np.uint8)
    flat = img.reshape(-1, 3)
    distinct = len(np.unique(flat[:: max(1, len(flat) // 200_000)], axis=0))
    ink = float(np.mean(flat.min(axis=1) < 240))
    return distinct, ink


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", default=str(REPO / "tests" / "data" / "history"))
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=2600)
    a = ap.parse_args()

    from sparkpredict.report import build_report

    with tempfile.TemporaryDirectory(prefix="sp-report-") as tmp:
        out = Path(tmp) / "report.html"
        t = time.monotonic()
        res = build_report(out, store=a.store)
        build_s = time.monotonic() - t
        n_img = out.read_text().count("data:image/png;base64,")
        shot_s = screenshot(out, PNG, a.width, a.height)
        size_kb = out.stat().st_size / 1024
    distinct, ink = colours(PNG)
    # Every figure the report made is on the page (a job without a model has no fit plot and
    # says so), at least the runtime and stage plots per job, and the screenshot is not blank.
    n_fig = sum(len(s.figures) for s in res.sections)
    ok = n_img == n_fig >= 2 * len(res.sections) and distinct > 200 and ink > 0.05
    notes = [f"{s.job}: {n}" for s in res.sections for n in s.notes] + res.warnings
    body = "\n".join([
        "## report_screenshot",
        "",
        (f"Report of `{Path(a.store).relative_to(REPO) if Path(a.store).is_relative_to(REPO) else a.store}` "
        f"({len(res.sections)} jobs: {', '.join(res.jobs)}), rendered by headless Chromium "
        f"({a.width}x{a.height}) into `benchmarks/report_screenshot.png`."),
        "",
        "| measure | value |",
        "|---|---|",
        f"| report build (fit models, draw, write) | {build_s:.1f} s |",
        f"| HTML size (self-contained) | {size_kb:.0f} KiB |",
        f"| embedded PNG plots | {n_img} |",
        f"| Chromium screenshot | {shot_s:.1f} s |",
        f"| distinct colours / non-white share in screenshot | {distinct} / {ink:.0%} |",
        "",
        *(f"- note on the page: {n}" for n in notes),
        "",
        (f"goal screenshot of the report in headless Chromium shows the plots: **{'met' if ok else 'not met'}** "
        f"({n_img} plots embedded, {distinct} colours on screen)"),
        "",
        # what else ran shows in the load, not in a sentence written once and kept
        f"Load average (1 min) at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores.",
    ])
    print(body)
    write_section("report_screenshot", body)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
