"""The report's figures, each a base64 PNG drawn with matplotlib (imported inside each
function, so importing :mod:`sparkpredict.report` stays light; ``build_report`` selects the Agg
backend before the first one is drawn).

* :func:`fig_runtime_vs_executors`: runtime against executors, one colour per input size, with
  the model's curve and its prediction interval (runs of unknown size grey, without one);
* :func:`fig_predicted_vs_actual`: predicted against actual runtime for every run;
* :func:`fig_stages`: the stage timeline of one run.

Each raises on what it cannot draw; :func:`sparkpredict.report.build_sections` turns that into a
note on the page.
"""
from __future__ import annotations

import base64
import functools
import io
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from .advice import format_level
from .errors import InputError
from .units import format_bytes, format_duration, plural

if TYPE_CHECKING:
    import pandas as pd

_F = TypeVar("_F", bound=Callable[..., str])


def _plain_text(fn: _F) -> _F:
    """Draw ``fn``'s figure with every text as written: matplotlib reads ``$...$`` as math, and
    Scala's stage names (``$anonfun$run$1 at ...``) and job names hold dollars; one such as
    ``map at $a^$`` failed the whole figure with a parse error."""

    @functools.wraps(fn)
    def drawn(*args, **kwargs):
        import matplotlib

        with matplotlib.rc_context({"text.parse_math": False}):
            return fn(*args, **kwargs)

    return drawn  # type: ignore[return-value]


def _png(fig) -> str:
    import warnings

    buf = io.BytesIO()
    with warnings.catch_warnings():
        # a run id or stage name in a script the font lacks (CJK) is drawn as boxes; matplotlib
        # said so once per glyph, with its source line, among the command's output
        warnings.filterwarnings("ignore", message="Glyph .* missing from font")
        fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def _template_row(runs: pd.DataFrame, features: list[str]) -> dict[str, float]:
    """Typical values of the job's features (median), to vary one or two of them in plots.

    A feature this job never recorded (executor memory of an ingested log, another job's
    parameter) stays NaN, which the model fills with its default; the median of no values
    would be NaN too, but numpy warns on stderr while computing it."""
    out = {}
    for c in features:
        if c in runs:
            known = runs[c].dropna()
            out[c] = float(known.median()) if len(known) else float("nan")
    return out


def _predict(model, rows: pd.DataFrame, confidence: float) -> dict:
    import numpy as np

    out = model.predict_interval(rows, confidence)
    return {k: np.asarray(out[k], float) for k in ("predicted_runtime_s", "lower_s", "upper_s")}


#: the colour and legend of runs that recorded no input size: no model uses them, but their
#: runtime at their executor count is still worth seeing
UNKNOWN_SIZE_COLOR = "0.55"
UNKNOWN_SIZE_LABEL = "size unknown"


def _drawn_level(model: Any, confidence: float) -> float:
    """The level of the interval a figure draws: a model with few out-of-fold errors supports
    less than the one asked for (``max_confidence``)."""
    most = getattr(model, "max_confidence", None)
    return min(confidence, most()) if most is not None else confidence


def _interval_words(model: Any, confidence: float) -> str:
    """``90% interval``, or for a model with no out-of-fold error ``no interval (no measured
    error)``: its "0% interval" read as a measured figure, as in suggest."""
    from .models.estimator import without_interval

    if without_interval(model):
        return "no interval (no measured error)"
    return f"{format_level(_drawn_level(model, confidence))} interval"


@_plain_text
def fig_runtime_vs_executors(job_runs, model, features, confidence) -> str:
    """``job_runs``: runs with a positive executor count and runtime; those without a positive
    input size are drawn grey (:data:`UNKNOWN_SIZE_LABEL`), without a curve: the model left
    them out and has no size to draw one at."""
    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    size = job_runs["input_bytes"].astype(float)
    known = np.isfinite(size) & (size > 0)
    sized, unsized = job_runs[known], job_runs[~known]
    sizes = sorted(sized["input_bytes"].unique())
    colors = plt.cm.viridis(np.linspace(0, 0.9, max(len(sizes), 1)))
    # The recorded counts plus one beyond: the curve shows the trend without far extrapolation.
    e_min, e_max = float(job_runs["executors"].min()), float(job_runs["executors"].max())
    # whole counts: a dynamic-allocation run's mean (1.09 executors) put every tick off them
    grid = np.arange(max(1.0, np.floor(e_min)), np.ceil(e_max) + 2.0)
    tmpl = _template_row(sized, features)  # the runs the model knows
    for color, s in zip(colors, sizes):
        sub = sized[sized["input_bytes"] == s]
        ax.scatter(sub["executors"], sub["runtime_s"], color=color, s=22, zorder=3,
                   label=format_bytes(s))
        if model is not None:
            X = pd.DataFrame([{**tmpl, "input_bytes": float(s), "executors": float(e)} for e in grid])
            p = _predict(model, X[features] if features else X, confidence)
            ax.plot(grid, p["predicted_runtime_s"], color=color, lw=1.5)
            ax.fill_between(grid, p["lower_s"], p["upper_s"], color=color, alpha=0.15, lw=0)
    if len(unsized):
        ax.scatter(unsized["executors"], unsized["runtime_s"], color=UNKNOWN_SIZE_COLOR, marker="x",
                   s=26, zorder=3, label=UNKNOWN_SIZE_LABEL)
    ax.set_xlabel("executors")
    ax.set_ylabel("runtime (s)")
    ax.set_xticks(grid)
    top = float(job_runs["runtime_s"].max())
    if ax.get_ylim()[1] > 1.6 * top:  # a wide band far from the data would flatten the runs
        ax.set_ylim(0, 1.6 * top)
    title = "runtime vs executors per input size"
    if model is not None:
        title += (f"\n(lines: {getattr(model, 'name_', 'model')} fit, "
                  f"bands: {_interval_words(model, confidence)})")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(title="input", fontsize=8, title_fontsize=8)
    return _png(fig)


@_plain_text
def fig_predicted_vs_actual(job_runs, model, features, confidence) -> str:
    import matplotlib.pyplot as plt
    import numpy as np

    p = _predict(model, job_runs[features], confidence)
    y = job_runs["runtime_s"].to_numpy(float)
    fig, ax = plt.subplots(figsize=(4.6, 4.0))
    bounded = np.isfinite(p["upper_s"])  # no interval: no bar, and no infinite axis
    yerr = np.vstack([p["predicted_runtime_s"] - p["lower_s"], p["upper_s"] - p["predicted_runtime_s"]])
    yerr = np.where(bounded, yerr, 0.0)
    ax.errorbar(y, p["predicted_runtime_s"], yerr=np.clip(yerr, 0, None), fmt="o", ms=4,
                alpha=0.7, elinewidth=0.8, capsize=2)
    lo = float(min(y.min(), np.where(bounded, p["lower_s"], y.min()).min()))
    hi = float(max(y.max(), np.where(bounded, p["upper_s"], p["predicted_runtime_s"]).max()))
    ax.plot([lo, hi], [lo, hi], "k--", lw=1, label="perfect")
    ax.set_xlabel("actual runtime (s)")
    ax.set_ylabel("predicted runtime (s)")
    mape = float(np.mean(np.abs(p["predicted_runtime_s"] - y) / y))
    cover = float(np.mean((y >= p["lower_s"]) & (y <= p["upper_s"]))) * 100
    cv = getattr(model, "cv_mape_", None)
    words = _interval_words(model, confidence)
    sub = f"in-sample MAPE {pct(mape, unit='fraction')}, " + (
        f"{cover:.0f}% inside the {words}" if bounded.all() else words)
    if cv is not None and np.isfinite(cv):
        sub += f"\ncross-validated MAPE {pct(cv, unit='fraction')}"
    ax.set_title(f"predicted vs actual\n{sub}", fontsize=10)
    ax.grid(alpha=0.3)
    return _png(fig)


def pct(v: float, *, unit: Literal["fraction", "percent"]) -> str:
    """``v`` as a percentage with one decimal: ``pct(0.05, unit="fraction")`` and
    ``pct(5.0, unit="percent")`` both read ``5.0%``.

    The caller names the unit because the value cannot tell it: a model's error (``cv_mape_``,
    :attr:`sparkpredict.advice.Advice.model_cv_mape`, a fraction) reaches 5.06, 506 %, for a
    replay far off its runs."""
    if unit == "fraction":
        return f"{float(v) * 100:.1f}%"
    if unit == "percent":
        return f"{float(v):.1f}%"
    raise ValueError(f"unit must be 'fraction' or 'percent', got {unit!r}")


def short_stage_name(name: object, limit: int = 48) -> str:
    """A stage's name as a figure label: Spark names a stage ``<action> at <call site>``, the
    call site often a long path whose tail (file and line) is what tells stages apart, so the
    path keeps its last part; what is still too long loses its middle, not its end."""
    text = " ".join(str(name).split())
    action, at, site = text.partition(" at ")
    if at:
        text = f"{action} at {site.rsplit('/', 1)[-1]}"
    if len(text) <= limit:
        return text
    head = (limit - 1) // 2
    return text[:head] + "…" + text[len(text) - (limit - 1 - head):]


def _executors_words(executors: float | None, fallback: float) -> str:
    """``4 executors``, ``1 executor``, ``2.43 executors`` (a dynamic-allocation run's mean)."""
    from .units import format_executors

    x = fallback if executors is None or not math.isfinite(executors) else executors
    return f"{format_executors(x)} executor{'' if x == 1 else 's'}"


def _finite_or_none(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


@_plain_text
def fig_stages(stages: pd.DataFrame, run: pd.Series, executors: float | None = None) -> str:
    """The latest run's stages as bars on its timeline; ``executors``: its count as the runs
    table has it (else the raw row's request, or the most it held)."""
    import matplotlib.pyplot as plt

    st = stages.sort_values(["submission_ms", "stage_id"]).reset_index(drop=True)
    if st.empty:
        raise InputError("the latest run has no stage rows", "record runs with the listener")
    t0 = float(run["start_ms"])
    fig, ax = plt.subplots(figsize=(7.5, 0.35 * len(st) + 1.4))
    for i, (_, r) in enumerate(st.iterrows()):  # st's index is 0..n-1: the bar's row
        start = (float(r["submission_ms"]) - t0) / 1000
        dur = max(float(r["duration_ms"]) / 1000 if r["duration_ms"] == r["duration_ms"] else 0.0, 0.01)
        shuffle = sum(float(r.get(c) or 0) for c in ("shuffle_read_bytes", "shuffle_write_bytes")
                      if r.get(c) == r.get(c))
        color = "tab:orange" if shuffle > 0 else "tab:blue"
        ax.barh(i, dur, left=start, color=color, alpha=0.85)
        n = _finite_or_none(r["num_tasks"])  # a row written through the store API may lack it
        count = f" ({plural(int(n), 'task')})" if n is not None else ""
        label = f"{r['stage_id']}: {short_stage_name(r['name'])}{count}"
        ax.text(start + dur, i, " " + label, va="center", fontsize=7)
    ax.set_yticks([])
    ax.invert_yaxis()
    ax.set_xlabel("seconds since application start")
    def num(key: str) -> float:
        v = run.get(key)
        return float(v) if v is not None and v == v else 0.0  # None and NaN count as 0  # noqa: PLR0124

    wall = num("wall_ms") / 1000
    ax.set_xlim(0, max(wall, 1) * 1.45)
    size = num("input_bytes")
    # a run that read nothing from storage has no size to show, as the runtime plot says
    ax.set_title(f"stages of the latest run {run['run_id']} ({format_bytes(size) if size > 0 else 'size unknown'}, "
                 f"{_executors_words(executors, num('executors_requested') or num('executors_max'))}, "
                 f"{format_duration(wall)})\norange: shuffles data, blue: no shuffle", fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    return _png(fig)
