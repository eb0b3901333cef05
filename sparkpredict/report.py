"""One self-contained HTML page per history store: runtime curves, fit quality, stages, advice.

:func:`build_report` reads the store, takes each job's runtime model from the store's registry
when it is current (trained on the job's runs as they are: the model ``suggest`` answers with),
fits the others (or takes fitted ones), and for each job draws with matplotlib
(:mod:`sparkpredict.report_figures`; PNG, base64-embedded; the page needs no network or files),
after a table of the jobs (runs and succeeded runs as ``store summary`` counts them, and the
jobs left out for having no succeeded run):

* runtime against executors, one colour per input size, with the model's fitted curve and its
  prediction interval (a run without an input size grey: the model leaves it out, and a note
  names it with the fix);
* predicted against actual runtime for every run the model used (in-sample, with its CV error quoted);
* the stage timeline of the job's latest run;
* the current advice for a larger input (:func:`sparkpredict.suggest_executors`).

Every piece is drawn in its own ``try``: a missing part (no models yet, no stage rows, advice
failing on too few runs) becomes a short note on the page, never a failed report. Nothing here
starts a JVM.
"""
from __future__ import annotations

import html
import logging
import math
import os
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import store_for_display
from .errors import InputError
from .report_figures import (
    fig_predicted_vs_actual,
    fig_runtime_vs_executors,
    fig_stages,
    pct,
)
from .units import format_bytes, format_duration, format_executors, plural

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)
#: A run is listed as slowed when it took at least this much longer than the model, fitted
#: without it, predicts (the advice's high-error warning uses the same bar).
SLOW_RUN_RATIO = 1.25


@dataclass
class JobSection:
    """What the report shows for one job (figures are base64 PNGs)."""

    job: str
    #: the job's succeeded runs (what the plots, models and advice read)
    n_runs: int
    figures: dict[str, str] = field(default_factory=dict)
    model_name: str | None = None
    cv_mape: float | None = None
    advice_text: str | None = None
    #: what input the advice is for, in words: "64 MB, 4x the largest recorded input"
    advice_for: str | None = None
    advice_table_html: str | None = None
    #: what the advice warns about (a wide interval, a high model error, memory), as ``suggest``
    #: prints it
    advice_warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: the runs furthest above the model the advice used (the plots' model, or the replay the
    #: advice fell back on), (run_id, input_bytes, executors, runtime_s, runtime / prediction), at
    #: least :data:`SLOW_RUN_RATIO`: the runs its high-error warning names
    slow_runs: list[tuple[str, float, float, float, float]] = field(default_factory=list)
    #: the predictions of :attr:`slow_runs` came from fits that included the run (a replay, or a
    #: model that kept no out-of-fold predictions), not from the fold that left it out
    slow_runs_in_sample: bool = False
    #: why :attr:`slow_runs` is empty (no run that far above the model, no model to compare the
    #: runs with), as the page says it
    slow_runs_absent: str | None = None
    #: where the whole-job model came from, as ``suggest`` says it: "from the registry, version 2
    #: (retrain ..., local path)", "fitted on the store's runs", "from the models given"
    model_source: str | None = None
    #: the model the advice used: the plots' model, or, for a job too small for one, the replay of
    #: its recorded tasks that ``suggest`` answers with
    advice_model_name: str | None = None
    advice_cv_mape: float | None = None
    #: the job's runs in the store whatever their status, as ``store summary`` counts them
    #: (None: :attr:`n_runs`)
    n_recorded: int | None = None
    #: of those, runs left out of training (``sparkpredict store edit --exclude``)
    n_excluded: int = 0
    #: succeeded runs no runtime model can use, run_id -> why (``"no input size"``): the model
    #: and the predicted-vs-actual plot leave them out, a note names them
    left_out_runs: dict[str, str] = field(default_factory=dict)

    @property
    def shown_model(self) -> tuple[str | None, float | None]:
        """(name, CV error) of the model the page names for the job: the advice's, else the plots'."""
        if self.advice_model_name:
            return self.advice_model_name, self.advice_cv_mape
        return self.model_name, self.cv_mape


@dataclass
class ReportResult:
    """The written report: where it is and what it holds."""

    path: Path
    store: str
    sections: list[JobSection]
    warnings: list[str]
    #: jobs of the store with no section, as none of their runs succeeded: job -> their runs
    #: (``"3 runs: 2 failed, 1 incomplete"``)
    left_out_jobs: dict[str, str] = field(default_factory=dict)

    @property
    def jobs(self) -> list[str]:
        return [s.job for s in self.sections]


def _escape(text: Any, quote: bool = True) -> str:
    """HTML-escaped, with every URI's secret masked: a note or warning can quote the store's
    URI (`sparkpredict retrain --store s3://KEY:SECRET@...`), and the page is shared."""
    from .config import mask_uri_secrets

    return html.escape(mask_uri_secrets(str(text)), quote)


def _attempt(section: JobSection, what: str, fn: Callable[..., Any], *args: Any) -> Any:
    """Run one piece, ``fn(*args)``; a failure becomes a note on the page (Sparklens-style
    isolation)."""
    try:
        return fn(*args)
    except Exception as exc:  # one failing piece must not sink the report
        msg = getattr(exc, "message", None) or (str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        fix = getattr(exc, "fix", None)  # as the CLI prints it under the error
        section.notes.append(f"{what} unavailable: {msg}" + (f" (fix: {fix})" if fix else ""))
        log.info("report: %s for %s failed", what, section.job, exc_info=True)
        return None


def _advice(job: str, input_bytes: float, store_path: str, models: dict | None,
            confidence: float) -> tuple[str, str, list[str], str, float | None]:
    from .advice import candidate_table, context_lines
    from .advise import suggest_executors

    adv = suggest_executors(job, int(input_bytes), store=store_path, models=models, confidence=confidence)
    cols, rows = candidate_table(adv)
    e = _escape
    head = "".join(f"<th>{e(c)}</th>" for c in cols)
    body = "".join(("<tr class='chosen'>" if r[0] else "<tr>") + "".join(f"<td>{e(v)}</td>" for v in r) + "</tr>"
                   for r in rows)
    # suggest's lines under the summary too: without the objective, "1 executor" read as a general
    # recommendation, and "extrapolates" hid how far
    text = "\n".join([f"objective {adv.objective}: {adv.summary()}", *context_lines(adv)])
    return (text, f"<table class='candidates'><tr>{head}</tr>{body}</table>", list(adv.warnings),
            adv.model_name, adv.model_cv_mape)


def _slow_runs(src: Any) -> tuple[list[tuple[str, float, float, float, float]], bool, str | None]:
    """(the runs of ``src`` (a :class:`~sparkpredict.advice_source.HistorySource`) furthest above
    its model, whether their predictions are in sample, why there are none)."""
    from .advice import self_checked

    if self_checked(src.model_name, src.n_runs):  # the advice names no run either
        return [], True, ("none listed: the job has one run, and the replay the advice used "
                          "reproduces that run (its self-check): there is no other run to compare it with")
    found = src.runs_above_model(k=3, min_ratio=SLOW_RUN_RATIO)
    # what runs_above_model ranks by: the out-of-fold ratios the model kept, else a fit of all runs
    in_sample = not getattr(src.model, "slow_runs_", None)
    if not found:
        return [], in_sample, (f"none listed: no run took {SLOW_RUN_RATIO:g}x or more of the "
                               f"{src.model_name} model's prediction for it")
    runs = src.runs
    cols = runs.set_index(runs["run_id"].astype(str))[["input_bytes", "executors", "runtime_s"]].astype(float)
    rows = {rid: tuple(float(x) for x in v) for rid, v in zip(cols.index, cols.to_numpy())}
    return [(rid, *rows[rid], ratio) for rid, ratio in found], in_sample, None


def _set_slow_runs(sec: JobSection, source: Callable[..., Any], *args: Any) -> None:
    """``sec``'s slowed runs, by the model of the history source ``source(*args)``."""
    found = _attempt(sec, "slowed runs", lambda: _slow_runs(source(*args)))
    if found is None:
        sec.slow_runs_absent = "none listed: they could not be computed (see the note above)"
    else:
        sec.slow_runs, sec.slow_runs_in_sample, sec.slow_runs_absent = found


def _advice_source(job: str, store_path: str) -> Any:
    """The history source the advice of ``job`` just used, models not given: the store's, from
    the advice's cache (the same model, not a second fit)."""
    from .advice_source import HistorySource

    return HistorySource.resolve(job, store=store_path)


def _registry_models(st: Any, runs_raw: pd.DataFrame, runs: pd.DataFrame, jobs: list[str],
                     behind: dict[str, str], sources: dict[str, str]) -> dict[str, Any]:
    """The registry's models of ``jobs`` that are current, as ``suggest`` takes them
    (:func:`sparkpredict.advice_cache.registry_model`); ``behind`` gets why the others' are not,
    ``sources`` which version each model is."""
    from .advice_cache import registry_model

    out = {}
    for job in jobs:
        model, why, which = registry_model(job, st, runs_raw[runs_raw["job"] == job],
                                           int((runs["job"] == job).sum()))
        if model is not None:
            out[job] = model
            sources[job] = str(which)
        elif why:
            behind[job] = why
    return out


#: why a run without an input size is left out, as :func:`_unusable_runs` says it
NO_INPUT_SIZE = "no input size"


def _unusable_runs(jr: pd.DataFrame) -> dict[str, str]:
    """run_id -> why no runtime model can use the run: the rows ``JobRuntimeModel.fit`` drops
    (no positive, finite input size, executor count or runtime)."""
    out = {}
    cols = [jr[c].astype(float).to_numpy() for c in ("input_bytes", "executors", "runtime_s")]
    for rid, *values in zip(jr["run_id"].astype(str), *cols):
        missing = [f"no {what}" for what, v in zip(("input size", "executor count", "runtime"), values)
                   if not (math.isfinite(v) and v > 0)]
        if missing:
            out[rid] = ", ".join(missing)
    return out


def _listed(ids: list[str], most: int = 5) -> str:
    shown = ", ".join(ids[:most])
    return shown + (f" and {len(ids) - most} more" if len(ids) > most else "")


def _left_out_note(left: dict[str, str], fitted: bool) -> str:
    """The note naming the runs :func:`_unusable_runs` found, why, and how to make them count."""
    sizeless = [r for r, why in left.items() if why == NO_INPUT_SIZE]
    other = [r for r in left if r not in sizeless]
    users = "the model and the predicted-vs-actual plot leave" if fitted else "no runtime model can use"
    parts = []
    if sizeless:
        it = "it" if len(sizeless) == 1 else "them"
        ids = sizeless[0] if len(sizeless) == 1 else "RUN_ID..."
        parts.append(f"{plural(len(sizeless), 'run')} recorded no input size: {_listed(sizeless)}; "
                     f"{users} {it}{' out' if fitted else ''}, and the runtime plot draws {it} grey "
                     f"(\"size unknown\"). Record {'its size' if len(sizeless) == 1 else 'their sizes'}: "
                     f"`sparkpredict store edit {ids} --input-size SIZE`")
    if other:
        it = "it" if len(other) == 1 else "them"
        ids = other[0] if len(other) == 1 else "RUN_ID..."
        parts.append(f"{plural(len(other), 'run')} left out of the model and the plots: "
                     f"{_listed([f'{r} ({left[r]})' for r in other])}. Exclude {it} from the job's history: "
                     f"`sparkpredict store edit {ids} --exclude`")
    return "; ".join(parts)


def _replay_note(why: str, model_name: str) -> str:
    """The note of a job without a whole-job model whose advice came from ``model_name``."""
    what = (" (it replays the job's recorded tasks on other executor counts and input sizes)"
            if model_name.startswith("replay") else "")
    return (f"no fitted whole-job model for this job ({why}): the runtime plot shows the runs only; "
            f"the advice, the CV MAPE in the jobs table and the runs furthest above the model come "
            f"from the {model_name} model instead{what}")


def _jobs_without_section(runs_raw: pd.DataFrame, shown: list[str]) -> dict[str, str]:
    """job -> its runs by status, for the store's jobs without a section: none of their runs
    succeeded."""
    out = {}
    for job, g in runs_raw[~runs_raw["job"].isin(shown)].groupby("job", sort=True):
        counts = g["status"].fillna("unknown").value_counts().sort_index()
        out[str(job)] = f"{plural(len(g), 'run')}: " + ", ".join(f"{n} {status}" for status, n in counts.items())
    return out


def build_sections(store_path: str, jobs: list[str] | None = None, models: dict | None = None,
                   confidence: float = 0.9, advice_factor: float = 2.0,
                   left_out: dict[str, str] | None = None) -> tuple[list[JobSection], list[str]]:
    """Compute every job's figures and texts (the data of the report), without writing HTML.

    ``left_out``, when given, gets the store's jobs without a section (``jobs`` not given: no
    succeeded run), job -> why."""
    from .advice_source import HistorySource
    from .features.runs import feature_columns, no_runs_error, runs_table
    from .store import io as store_io

    if isinstance(jobs, str):  # one job's name, not its letters
        jobs = [jobs]
    if not (isinstance(advice_factor, (int, float)) and math.isfinite(advice_factor) and advice_factor > 0):
        raise InputError(f"advice_factor must be a positive number, got {advice_factor!r}",
                         "give the multiple of each job's largest input to advise for, e.g. 2.0")
    st = store_io.open(store_path)
    warnings: list[str] = []
    runs_raw = st.runs()
    runs = runs_table(runs_raw)
    if runs.empty:
        raise no_runs_error(store_path, runs_raw)
    all_jobs = sorted(runs["job"].unique())
    if jobs:
        unknown = [j for j in jobs if j not in all_jobs]
        recorded_only = [j for j in unknown if (runs_raw["job"] == j).any()]
        if len(unknown) == 1 and recorded_only:
            # runs that are all excluded, failed or cut: say which, and how to take them back
            from .fitting import no_succeeded_run

            what, fix = no_succeeded_run(runs_raw[runs_raw["job"] == unknown[0]])
            raise InputError(f"job {unknown[0]!r} has no succeeded runs in {store_path}: {what}",
                             f"{fix}; or choose among: {', '.join(map(repr, all_jobs))}")
        if unknown:
            raise InputError(f"no succeeded runs of job(s) {', '.join(map(repr, unknown))} in {store_path}",
                             f"choose among: {', '.join(map(repr, all_jobs))}")
        all_jobs = [j for j in all_jobs if j in jobs]
    elif left_out is not None:
        left_out.update(_jobs_without_section(runs_raw, all_jobs))
    recorded = runs_raw.groupby("job")["run_id"].size()
    excluded = runs_raw[runs_raw["status"] == "excluded"].groupby("job")["run_id"].size()
    unfitted: dict[str, str] = {}  # job -> why it has no model
    behind: dict[str, str] = {}  # job -> why the registry's model was not used
    sources: dict[str, str] = {}  # job -> where its model came from
    if models is None:
        from .advice_cache import fitted_source

        models = _registry_models(st, runs_raw, runs, all_jobs, behind, sources)
        rest = [j for j in all_jobs if j not in models]
        sources.update({j: fitted_source(j in behind) for j in rest})
        try:
            if rest:
                from .models.persist import fit_all

                models.update(fit_all(runs[runs["job"].isin(rest)], skipped=unfitted))
        except Exception as exc:  # models missing or unfit: plots still show the runs  # noqa: BLE001
            if not unfitted:  # each job's own reason goes to its section
                warnings.append(f"runtime models unavailable: {getattr(exc, 'message', exc)}")
    features = [c for c in feature_columns(runs) if c in runs.columns]
    stages_all = None
    sections = []
    for job in all_jobs:
        jr = runs[runs["job"] == job].reset_index(drop=True)
        sec = JobSection(job=job, n_runs=len(jr), n_recorded=int(recorded.get(job, len(jr))),
                         n_excluded=int(excluded.get(job, 0)))
        if job in behind:
            sec.notes.append(behind[job])
        model = models.get(job)
        sec.left_out_runs = _unusable_runs(jr)
        why_out = jr["run_id"].astype(str).map(sec.left_out_runs)
        usable = jr[why_out.isna()]
        # a run of unknown size still has a runtime at its executor count: the runtime plot shows it
        drawable = jr[why_out.isna() | (why_out == NO_INPUT_SIZE)]
        no_model_note = why = None
        if model is None:
            why = unfitted.get(job, "none was given for it")
            no_model_note = len(sec.notes)
            sec.notes.append(f"no fitted whole-job model for this job ({why}): the plots show the runs only")
        else:
            sec.model_name = getattr(model, "name_", type(model).__name__)
            sec.model_source = sources.get(job, "from the models given")
            sec.cv_mape = getattr(model, "cv_mape_", None)
            # the source the advice builds from `models`: the same runs and model
            _set_slow_runs(sec, HistorySource, job, model, jr)
        # a job whose runs all lack a size: the no-advice note below says it, with the fix
        if sec.left_out_runs and not (usable.empty and set(sec.left_out_runs.values()) == {NO_INPUT_SIZE}):
            sec.notes.append(_left_out_note(sec.left_out_runs, model is not None))
        fig = None
        if not drawable.empty:
            fig = _attempt(sec, "runtime curve", fig_runtime_vs_executors, drawable, model, features, confidence)
            if fig is None and model is not None:  # retry without the model: the runs alone still help
                fig = _attempt(sec, "runtime plot", fig_runtime_vs_executors, drawable, None, features,
                               confidence)
        if fig:
            sec.figures["runtime_vs_executors"] = fig
        if model is not None and not usable.empty:
            fig = _attempt(sec, "predicted-vs-actual plot", fig_predicted_vs_actual, usable, model, features,
                           confidence)
            if fig:
                sec.figures["predicted_vs_actual"] = fig

        def stage_fig(job: str, jr: pd.DataFrame = jr) -> str:
            nonlocal stages_all
            latest = runs_raw[(runs_raw["job"] == job) & (runs_raw["status"] == "succeeded")] \
                .sort_values("start_ms").iloc[-1]
            if stages_all is None:
                stages_all = st.stages()
            # the runs table's count (a local master's threads, the mean under dynamic
            # allocation), as the runtime plot and the table show it: the raw row's request
            # said 1 of a local[*] run of 4
            same = jr.loc[jr["run_id"].astype(str) == str(latest["run_id"]), "executors"]
            executors = float(same.iloc[0]) if len(same) else None
            return fig_stages(stages_all[stages_all["run_id"] == latest["run_id"]], latest, executors)

        fig = _attempt(sec, "stage breakdown", stage_fig, job)
        if fig:
            sec.figures["stages"] = fig
        target = float(jr["input_bytes"].max()) * advice_factor
        if not target > 0:
            sec.notes.append("no advice: the runs of this job recorded no input size (declare it "
                             "with spark.sparkpredict.inputBytes or `sparkpredict submit --input-size`; "
                             "for runs already recorded, `sparkpredict store edit RUN_ID... "
                             "--input-size SIZE`)")
            if model is None:
                sec.slow_runs_absent = ("none listed: no model compares this job's runs with each "
                                        "other (its runs recorded no input size)")
            sections.append(sec)
            continue
        # without a whole-job model the store still answers, as `suggest` does: by replaying
        # the job's recorded tasks
        adv = _attempt(sec, f"advice for {format_bytes(target)}", _advice, job, target, store_path,
                       models if model is not None else None, confidence)
        if adv:
            sec.advice_text, sec.advice_table_html, sec.advice_warnings, *used = adv
            # the exact bytes too: the advice is reproduced with `suggest --input-size` only from them
            sec.advice_for = (f"{format_bytes(target)} ({int(target):,} bytes; --input-size {int(target)}), "
                              f"{advice_factor:g}x the largest recorded input")
            sec.advice_model_name, sec.advice_cv_mape = used
            if no_model_note is not None and why is not None and sec.advice_model_name:
                sec.notes[no_model_note] = _replay_note(why, sec.advice_model_name)
        if model is None and adv:
            # the runs the advice's high-error warning names come from the model it used
            _set_slow_runs(sec, _advice_source, job, store_path)
        elif model is None:
            sec.slow_runs_absent = ("none listed: no model compares this job's runs with each other "
                                    "(the advice, which would replay their tasks, is unavailable: see "
                                    "the note above)")
        sections.append(sec)
    return sections, warnings


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px auto;max-width:1180px;
color:#222;padding:0 16px} h1{font-size:22px;margin-bottom:4px} h2{font-size:18px;border-bottom:1px solid #ddd;
padding-bottom:4px;margin-top:32px} .meta{color:#666;font-size:13px} .figs{display:flex;flex-wrap:wrap;gap:12px}
.figs img{border:1px solid #eee;max-width:100%} pre{background:#f6f8fa;padding:10px;font-size:12.5px;
overflow-x:auto} table{border-collapse:collapse;font-size:12.5px} td,th{padding:3px 8px;border-bottom:1px solid #eee;
text-align:right} th{background:#fafafa} .note{color:#8a5a00;background:#fff8e1;padding:6px 10px;margin:6px 0;
font-size:13px} .warn{color:#a00} tr.chosen td{font-weight:600;background:#eef6ff}
"""


_ID_SAFE = re.compile(r"[A-Za-z0-9_-]+")


def job_anchor(job: str) -> str:
    """The HTML id of ``job``'s section, the same in every report: ``job-NAME`` for a name of
    ASCII letters, digits, ``-`` and ``_`` (a valid id and URL fragment as it is), else the name
    with every other run of characters made one ``-``, plus a checksum of the whole name
    (``job-NDS-Power-Run-1a2b3c4d``), so that names differing only there keep apart."""
    if _ID_SAFE.fullmatch(job):
        return f"job-{job}"
    kept = re.sub(r"-{2,}", "-", re.sub(r"[^A-Za-z0-9_-]+", "-", job)).strip("-")
    digest = f"{zlib.crc32(job.encode('utf-8')):08x}"
    return f"job-{kept}-{digest}" if kept else f"job-{digest}"


def _anchors(jobs: list[str]) -> dict[str, str]:
    """Each job's section id, unique on the page: a name that happens to read as another's
    checksummed id (``a-b-...`` next to ``a b``) gets a counter."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for job in jobs:
        anchor = base = job_anchor(job)
        n = 2
        while anchor in taken:
            anchor, n = f"{base}-{n}", n + 1
        taken.add(anchor)
        out[job] = anchor
    return out


def _recorded(s: JobSection) -> int:
    return s.n_runs if s.n_recorded is None else s.n_recorded


def render_html(sections: list[JobSection], store_path: str, warnings: list[str],
                left_out_jobs: dict[str, str] | None = None) -> str:
    """The page: a summary table (and the store's jobs it leaves out, job -> why), then one
    section per job."""
    # a single run's replay has no CV: its error is a self-check
    from .advice import self_checked

    e = _escape
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    anchors = _anchors([s.job for s in sections])

    def cv_cell(cv: float | None) -> str:  # cv_mape_ and Advice.model_cv_mape are fractions
        return pct(cv, unit="fraction") if cv is not None and math.isfinite(cv) else "-"

    rows = "".join(
        f"<tr><td style='text-align:left'><a href='#{e(anchors[s.job])}'>{e(s.job)}</a></td>"
        f"<td>{_recorded(s)}</td><td>{s.n_runs}</td>"
        f"<td style='text-align:left'>{e(name or '-')}</td>"
        f"<td>{cv_cell(cv)}{' (self-check)' if self_checked(name or '', s.n_runs) else ''}</td></tr>"
        for s in sections for name, cv in [s.shown_model])
    parts = [(f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>sparkpredict report</title>"
              f"<style>{_CSS}</style></head><body>"),
             "<h1>sparkpredict report</h1>",
             f"<div class='meta'>store <code>{e(store_for_display(store_path))}</code> &middot; generated {now}</div>"]
    parts += [f"<div class='note warn'>{e(w)}</div>" for w in warnings]
    # runs and succeeded as `store summary` counts them; the plots and models use the succeeded
    parts.append("<h2>Jobs</h2><table><tr><th style='text-align:left'>job</th><th>runs</th><th>succeeded</th>"
                 f"<th style='text-align:left'>model</th><th>CV MAPE</th></tr>{rows}</table>"
                 "<div class='meta'>CV MAPE: the chosen model's error on the cross-validation folds it was "
                 "chosen by, so a little optimistic; <code>sparkpredict evaluate RUNS</code> scores every "
                 "model on the study's protocols instead.</div>")
    if left_out_jobs:
        items = "; ".join(f"{e(j)} ({e(why)})" for j, why in left_out_jobs.items())
        parts.append(f"<div class='note left-out-jobs'>{plural(len(left_out_jobs), 'job')} of the store "
                     f"left out, no succeeded run to plot, fit or advise on: {items}</div>")
    captions = {"runtime_vs_executors": "Runtime against executors",
                "predicted_vs_actual": "Predicted against actual", "stages": "Stage breakdown"}
    for s in sections:
        shown = s.shown_model[0]
        counted = plural(_recorded(s), "run") + (f", {s.n_runs} succeeded" if _recorded(s) != s.n_runs else "") \
            + (f", {s.n_excluded} excluded from training (sparkpredict store edit RUN_ID --include takes "
               "one back)" if s.n_excluded else "")
        parts.append(f"<h2 id='{e(anchors[s.job])}'>{e(s.job)} <span class='meta'>{counted}"
                     + (f", model {e(shown or s.model_name)}"
                        + (f" <span class='model-source'>({e(s.model_source)})</span>" if s.model_source else "")
                        if s.model_name else
                        f", no whole-job model, advice from {e(shown)}" if shown else "") + "</span></h2>")
        parts += [f"<div class='note'>{e(n)}</div>" for n in s.notes]
        parts.append("<div class='figs'>")
        for key in ("runtime_vs_executors", "predicted_vs_actual", "stages"):
            if key in s.figures:
                parts.append(f"<img alt='{captions[key]}' title='{captions[key]}' "
                             f"src='data:image/png;base64,{s.figures[key]}'>")
        parts.append("</div>")
        if s.slow_runs:
            rows = "".join(f"<tr><td style='text-align:left'><code>{e(r)}</code></td><td>{e(format_bytes(b))}</td>"
                           f"<td>{format_executors(x)}</td><td>{e(format_duration(t))}</td><td>{q:.2f}x</td></tr>"
                           for r, b, x, t, q in s.slow_runs)
            fit = ("made with the run among those the model knew (the model the advice used keeps "
                   "no predictions made without it)" if s.slow_runs_in_sample else "fitted without it")
            parts.append("<h3>Runs furthest above the model</h3><div class='meta'>runtime over the model's "
                         f"prediction for the run, {fit}; each widens the advice's intervals. "
                         "<code>sparkpredict explain RUN_ID</code> says what slowed it.</div><table><tr>"
                         "<th style='text-align:left'>run</th><th>input</th><th>executors</th><th>runtime</th>"
                         f"<th>over the model</th></tr>{rows}</table>")
        elif s.slow_runs_absent:
            parts.append(f"<h3>Runs furthest above the model</h3><div class='meta slow-runs-absent'>"
                         f"{e(s.slow_runs_absent)}</div>")
        if s.advice_text:
            heading = "Current advice" + (f" for {e(s.advice_for)}" if s.advice_for else "")
            parts.append(f"<h3>{heading}</h3><pre>{e(s.advice_text)}</pre>")
            if s.advice_warnings:
                items = "".join(f"<li>{e(w)}</li>" for w in s.advice_warnings)
                parts.append(f"<ul class='advice-warnings warn'>{items}</ul>")
        if s.advice_table_html:
            parts.append(f"<details><summary>all candidates</summary>{s.advice_table_html}</details>")
    parts.append("</body></html>")
    return "\n".join(parts)


def build_report(out: str | os.PathLike, store: str | os.PathLike | None = None,
                 jobs: list[str] | None = None, models: dict | None = None,
                 confidence: float = 0.9, advice_factor: float = 2.0) -> ReportResult:
    """Write the HTML report of ``store`` (default: the embedded store) to ``out``.

    Parameters
    ----------
    out : path
        The HTML file to write (written to a temporary name, then renamed).
    store : path, optional
        History store; default the embedded local store.
    jobs : list of str, optional
        Only these jobs (default: every job with succeeded runs; the others are named in
        :attr:`ReportResult.left_out_jobs` and on the page).
    models : dict, optional
        Fitted models per job (``sparkpredict.models.persist.fit_all``). By default the registry's
        model of each job when it is current, as ``suggest`` uses it, else one fitted here (the
        job's section then says why the registry's was not used).
    confidence : float
        Coverage of the intervals drawn and of the advice's interval (default 0.9).
    advice_factor : float
        The advice shown is for this multiple of the job's largest recorded input.

    Raises
    ------
    StoreError
        No store, or no succeeded runs in it.
    InputError
        A job asked for has no succeeded runs, or ``out`` is a folder, cannot be written or
        lies inside a history store, or does not end in ``.html`` (or ``.htm``) (checked before the report is
        built).
    """
    import matplotlib

    matplotlib.use("Agg")  # no display; must precede pyplot's import
    from .config import resolve_store
    from .outputs import output_page, write_text

    output_page(out)
    store_path = resolve_store(store)
    left_out: dict[str, str] = {}
    sections, warnings = build_sections(store_path, jobs, models, confidence, advice_factor, left_out)
    page = render_html(sections, store_path, warnings, left_out)
    out = write_text(out, page, "report.html")
    return ReportResult(out.resolve(), store_path, sections, warnings, left_out)


__all__ = ["JobSection", "ReportResult", "build_report", "build_sections", "job_anchor", "render_html"]
