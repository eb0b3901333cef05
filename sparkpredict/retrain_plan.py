"""Judging which models of which jobs a retrain refits: staleness, and the records of failed fits.

Incremental, per model kind (:func:`_judge`, the one judge of the local path, the Spark path's
executors, ``--dry-run`` and :func:`~sparkpredict.retrain.result_if_current`): a job's whole-job
or stage model is refit only when the fingerprint of the job's runs (sha256 of its
``run_id:updated_ms`` lines) differs from that model's registry row, when its artifact is of an
older format or store schema, or with ``force``; the stage model only when stage models are asked
for. A model whose fit failed is recorded as such in the registry's snapshot
(:func:`_failure_row`), and not tried again until its runs change (or ``force``): it is "still
failing". Fitting and committing are :mod:`sparkpredict.retrain`'s.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from . import registry as R
from .fitting import Outcome
from .store import schema as S
from .units import plural

if TYPE_CHECKING:
    import pandas as pd

Failures = dict[tuple[str, str], dict]  # (job, model kind) -> the record of its last failed fit

#: The fit errors of a model whose runs cannot support it yet (too few usable runs, none that
#: succeeded, all at one executor count): the retrain skips it until its runs change, as it
#: should a job too young to fit. Any other error of a fit fails the retrain (exit status 1).
SKIPPED_ERRORS = frozenset({"DegenerateDataError"})

# How fitting.fit_group_safe words a fit's error: "ClassName: message (fix: ...)".
_ERROR_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*): ")


def _own_errors() -> frozenset[str]:
    from . import errors

    return frozenset(n for n, c in vars(errors).items()
                     if isinstance(c, type) and issubclass(c, errors.SparkPredictError))


def _fit_error(err: str | None, error_type: str | None = None) -> tuple[str | None, str]:
    """(the exception class, the reason to show) of a failed fit's error, as
    ``fit_group_safe`` words it (``"DegenerateDataError: message (fix: ...)"``) or as a record
    of a failed fit keeps it (the reason, and ``error_type``; older records kept the worded
    error). The reason drops the name of sparkpredict's own errors, which says nothing a user
    can act on, and keeps a foreign one's (``ValueError: ...``), which says what went wrong."""
    text = str(err or "")
    m = _ERROR_NAME.match(text)
    if m is None:
        return error_type, text
    name = m.group(1)
    return error_type or name, text[m.end():] if name in _own_errors() else text


def _skipped_error(error_type: str | None) -> bool:
    """The fit failed for the data (:data:`SKIPPED_ERRORS`): a skip, not an error of the retrain."""
    return error_type in SKIPPED_ERRORS


#: The state of a registry row whose artifact is gone: never current, so its model is refit. Kept,
#: not dropped: a stage model is judged only where the job has a stage row, and one whose file
#: was deleted had read "unchanged" on every retrain while the advice could not load it.
MISSING: tuple = (None, None, None, None, None, None)


def _prev_state(prev: pd.DataFrame, failures: Failures | None = None,
                present: set[str] | None = None) -> dict[tuple[str, str], tuple]:
    """(job, model_kind) -> what decides staleness, small enough to ship to Spark's Python workers;
    (job, ``failed:<kind>``) -> the same of the kind's last failed fit. A row whose artifact is
    not among ``present`` (:func:`~sparkpredict.registry.present_artifacts`) is :data:`MISSING`: stale."""
    cur = prev[prev.model_kind.isin([R.KIND_RUNTIME, R.KIND_STAGE]) & (prev.signature.fillna("") == "")]
    # pandas-stubs type every named-tuple field as any scalar; the registry's schema fixes them
    rows: Iterable[Any] = cur.itertuples(index=False)
    out = {(r.job, r.model_kind): R.model_state(r) if present is None or r.artifact in present else MISSING
           for r in rows}
    for (job, kind), rec in (failures or {}).items():
        # another sparkpredict may fit what this one could not (and the reverse): it tries again
        if R.fitted_here(rec.get("sparkpredict_version")):
            out[(job, R.failed_kind(kind))] = R.model_state(rec)
    return out


def _verdict(state: dict[tuple[str, str], tuple], job: str, model_kind: str, fp: str, force: bool,
             fit_kind: str, model_format: int) -> str:
    """"current" (its registry row is of these runs, formats and kind), "failing" (its last fit
    failed on exactly these runs, formats and kind) or "stale"."""
    if force:
        return "stale"
    if R.is_current(state.get((job, model_kind)), fp, fit_kind, model_format):
        return "current"
    if R.is_current(state.get((job, R.failed_kind(model_kind))), fp, fit_kind, model_format):
        return "failing"
    return "stale"


def refit_reason(state: tuple | None, fp: str, kind: str, model_format: int) -> str:
    """Why a whole-job model of registry state ``state`` (:func:`~sparkpredict.registry.model_state`,
    None: no model) is refit on runs of fingerprint ``fp`` as ``kind``: a retrain that refit every
    job after a ``--kind amdahl`` one, with no word of why, read as lost incremental state."""
    if state is None:
        return "no model yet"
    trained_on, artifact_version, model_version, schema_version, fit_kind, this_code = state
    if trained_on != fp:
        return "its runs changed"
    if fit_kind != kind:
        return f"its model was fitted with --kind {fit_kind}, this retrain asks --kind {kind}"
    if (artifact_version, model_version, schema_version) != (R.ARTIFACT_VERSION, model_format, S.SCHEMA_VERSION):
        return "its model was written by another sparkpredict (another format)"
    if not this_code:
        return "its model was fitted by another sparkpredict (other model code)"
    return "--force"


def refit_reasons(state: dict[tuple[str, str], tuple], fingerprints: dict[str, tuple[str, int]],
                  jobs: Iterable[str], kind: str, present: dict[tuple[str, str], tuple] | None = None) -> dict[str, str]:
    """:func:`refit_reason` of each of ``jobs`` (whose whole-job model is refit). ``present``: the
    same state with the rows whose artifact is gone :data:`MISSING` (:func:`_prev_state` with ``present``)."""
    fmt = R.runtime_model_format()
    out = {}
    for job in jobs:
        if job not in fingerprints:
            continue
        key = (job, R.KIND_RUNTIME)
        out[job] = ("its model's file is missing" if present is not None and key in state and present.get(key) == MISSING
                    else refit_reason(state.get(key), fingerprints[job][0], kind, fmt))
    return out


def reasons_line(reasons: dict[str, str]) -> str:
    """``why: its runs changed (etl, sort); no model yet (wordcount)``: each reason with its jobs,
    the most common first, counted (``12 jobs``) when there are more than 3."""
    by: dict[str, list[str]] = {}
    for job, why in sorted(reasons.items()):
        by.setdefault(why, []).append(job)
    parts = [f"{why} ({', '.join(jobs) if len(jobs) <= 3 else plural(len(jobs), 'job')})"
             for why, jobs in sorted(by.items(), key=lambda kv: -len(kv[1]))]
    return "why: " + "; ".join(parts)


def _judge(state: dict[tuple[str, str], tuple], job: str, fp: str, force: bool, kind: str,
           stage_models: bool = True) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the model kinds of ``job`` to refit, those not refit because their last fit failed on the
    runs the job has now), each kind judged on its own registry row and failure record.

    The one judge of both paths (the Spark path's executors call it), ``--dry-run`` and
    :func:`~sparkpredict.retrain.result_if_current`. Without stage models asked for, the stage
    row is not looked at: it would otherwise make every retrain refit the whole-job model of a
    job whose stage model is behind. A job with neither a stage model nor a failed stage fit gets one when its
    whole-job model is refit (its runs changed, or ``force``). A model that could not be fitted
    (too few runs, no finished run) is tried again when its runs change, or with ``force``.
    """
    from .models.stages import STAGE_FORMAT_VERSION

    verdicts = {R.KIND_RUNTIME: _verdict(state, job, R.KIND_RUNTIME, fp, force, kind, R.runtime_model_format())}
    if stage_models:
        if (job, R.KIND_STAGE) in state or (job, R.failed_kind(R.KIND_STAGE)) in state:
            verdicts[R.KIND_STAGE] = _verdict(state, job, R.KIND_STAGE, fp, force, R.KIND_STAGE,
                                              STAGE_FORMAT_VERSION)
        elif verdicts[R.KIND_RUNTIME] == "stale":
            verdicts[R.KIND_STAGE] = "stale"
    return (tuple(k for k, v in verdicts.items() if v == "stale"),
            tuple(k for k, v in verdicts.items() if v == "failing"))


def _not_refit(job: str, refit: tuple[str, ...], failing: tuple[str, ...]) -> list[Outcome]:
    """The outcomes of the models of ``job`` that :func:`_judge` keeps: "unchanged" when nothing
    of the job is refit and its whole-job model is not failing, "still_failing" for each model
    whose fit failed on these same runs. Both paths hand them to
    :func:`~sparkpredict.retrain._commit` with the fits."""
    out: list[Outcome] = [(job, k, "still_failing", None, None) for k in failing]
    if not refit and R.KIND_RUNTIME not in failing:
        out.insert(0, (job, R.KIND_RUNTIME, "unchanged", None, None))
    return out


def _plan(state: dict[tuple[str, str], tuple], fingerprints: dict[str, tuple[str, int]], force: bool,
          kind: str = "auto", stage_models: bool = True) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """Every job of ``fingerprints``, sorted, with its :func:`_judge` (kinds to refit, kinds still failing)."""
    return {job: _judge(state, job, fp, force, kind, stage_models) for job, (fp, _n) in sorted(fingerprints.items())}


def _stale(plan: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]) -> dict[str, tuple[str, ...]]:
    """The jobs of ``plan`` with a model to refit, and those kinds."""
    return {job: refit for job, (refit, _failing) in plan.items() if refit}


def _label(job: str, kind: str) -> str:
    """How ``failed`` names a model: the job for its whole-job model."""
    return job if kind == R.KIND_RUNTIME else f"{job} ({kind} model)"


def _only(fps: dict[str, tuple[str, int]], jobs: Iterable[str] | None) -> dict[str, tuple[str, int]]:
    if jobs is None:
        return fps
    keep = set(jobs)
    return {j: v for j, v in fps.items() if j in keep}


def check_jobs(jobs: Iterable[str] | str | None, known: Iterable[Any], where: str) -> list[str] | None:
    """The jobs a retrain is limited to (a bare name is one job), each one with runs in the
    store ``where``; None for every job. A name without runs is refused before anything is
    read or fitted: a retrain limited to it would refit nothing and say all was well."""
    import difflib

    from .config import shown_job
    from .errors import UnknownJobError

    if jobs is None:
        return None
    asked = [jobs] if isinstance(jobs, str) else list(jobs)
    names = sorted({str(j) for j in known if isinstance(j, str)})
    bad = [j for j in asked if not isinstance(j, str) or j not in names]
    if asked and not bad:
        return list(dict.fromkeys(asked))
    if not asked:
        raise UnknownJobError("no job given to refit", "give a job name, or leave the jobs out to refit every job")
    close = difflib.get_close_matches(str(bad[0]), names, n=1, cutoff=0.7)
    listed = ", ".join(map(shown_job, names[:10])) + (" ..." if len(names) > 10 else "")
    raise UnknownJobError(f"no runs of job {bad[0]!r} in {where}",
                          (f"did you mean {shown_job(close[0])}? " if close else "")
                          + (f"jobs with runs: {listed}" if names else "record runs of the job first"))


def _local_fingerprints(raw: pd.DataFrame) -> dict[str, tuple[str, int]]:
    raw = raw[raw.job.notna() & raw.run_id.notna()]
    return {str(j): (R.runs_fingerprint(g), len(g)) for j, g in raw.groupby("job", sort=True)}


def _failure_row(job: str, kind: str, fp: tuple[str, int], fit_kind: str, error: str, now_ms: int,
                 retrain_id: str, fit_path: str, failures: Failures, error_type: str | None = None) -> dict:
    """The record of a failed fit (:data:`sparkpredict.registry.FAILED_FITS_KEY`): what
    :func:`_verdict` compares with the job's runs, formats and kind next time, and the error
    (the reason shown, and its class, which tells a skip from an error: :func:`_fit_error`)."""
    from .models.stages import STAGE_FORMAT_VERSION

    return {
        "job": job, "model_kind": R.failed_kind(kind), "signature": "",
        "version": int(failures.get((job, kind), {}).get("version") or 0) + 1, "trained_at_ms": now_ms,
        "fit_kind": fit_kind if kind == R.KIND_RUNTIME else R.KIND_STAGE,
        "trained_on": fp[0], "trained_on_rows": int(fp[1]), "artifact": None,
        "artifact_version": R.ARTIFACT_VERSION,
        "model_format_version": R.runtime_model_format() if kind == R.KIND_RUNTIME else STAGE_FORMAT_VERSION,
        "store_schema_version": S.SCHEMA_VERSION, "sparkpredict_version": R.fitted_by(),
        "retrain_id": retrain_id, "fit_path": fit_path, "registry_version": R.REGISTRY_VERSION,
        "error": error, "error_type": error_type,
    }


def _still_failing(judged: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]) -> list[str]:
    return sorted(_label(job, k) for job, (_refit, failing) in judged.items() for k in failing)
