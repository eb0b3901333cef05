"""The one fitting function of each model kind, shared by both retrain paths.

:func:`fit_group` (whole-job model) and :func:`fit_stage_group` (stage-level model) take one
job's store rows, in any order and as either path read them (pyarrow locally, Spark on the
executors), normalise them to the store's schema and order, and return the model's artifact
document. :func:`fit_group_safe` runs both and turns a job that cannot be fitted into an
outcome row instead of an exception, so one bad job never stops a retrain. Orchestration
(what is stale, where to fit, the atomic commit) is :mod:`sparkpredict.retrain`'s.
"""
from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from . import registry as R
from .errors import InputError
from .store import schema as S

if TYPE_CHECKING:
    import pandas as pd


def _conform_rows(table: str, df: pd.DataFrame | None) -> pd.DataFrame:
    """Rows of a store table as :meth:`Store.read` gives them, whichever path read them."""
    if df is None or not len(df):
        return S.empty_table(table).to_pandas()
    cols = [c for c in S.TABLES[table].names if c in df.columns]
    return S.conform(table, pa.Table.from_pandas(df[cols], preserve_index=False)).to_pandas()


def _normalize(raw: pd.DataFrame) -> pd.DataFrame:
    """Same rows -> same frame, whichever path read them: runs-schema dtypes, fixed order."""
    df = _conform_rows("runs", raw)
    return df.sort_values(["start_ms", "run_id"], kind="stable", na_position="first").reset_index(drop=True)


def fit_group(raw_runs: pd.DataFrame, *, random_state: int = 0, kind: str = "auto") -> dict:
    """Fit one job's whole-job model from its raw ``runs`` rows; return the artifact document.

    This is the one fitting function of both paths: :func:`sparkpredict.features.runs.runs_table`
    then :func:`sparkpredict.models.persist.fit_job`, on rows normalised by :func:`_normalize`.

    Parameters
    ----------
    raw_runs : DataFrame
        The store's ``runs`` rows of one job (latest row per run), in any order.
    random_state : int
        Passed to the fit; fits are deterministic for a given value.
    kind : str
        Model kind for :class:`sparkpredict.models.hybrid.JobRuntimeModel` (default ``auto``).

    Returns
    -------
    dict
        JSON-safe artifact document (:func:`sparkpredict.registry.make_artifact`) with a
        ``meta`` entry: model name, cv_mape, n_runs, training_range.
    """
    from .features.runs import runs_table
    from .models.persist import fit_job

    raw = _normalize(raw_runs)
    jobs = raw["job"].dropna().unique()
    if len(jobs) != 1:
        raise InputError(f"fit_group needs the runs of exactly one job, got {len(jobs)}")
    job = str(jobs[0])
    table = runs_table(raw)
    if table.empty:  # say why there is nothing to fit, not "0 usable runs (of 0)"
        from .errors import DegenerateDataError

        counts = raw["status"].fillna("unknown").value_counts()
        raise DegenerateDataError(
            "no succeeded run (" + ", ".join(f"{n} {s}" for s, n in counts.items()) + ")",
            no_succeeded_run(raw)[1])
    model = fit_job(table, random_state=random_state, kind=kind)
    doc = R.make_artifact(job, R.KIND_RUNTIME, model.to_dict(),
                          trained_on=R.fingerprint(raw["run_id"], raw["updated_ms"]),
                          trained_on_rows=len(raw))
    doc["meta"] = {
        "model_name": str(model.name_),
        "fit_kind": kind,
        "cv_mape": _float_or_none(model.cv_mape_),
        "n_runs": int(model.n_runs_),
        "training_range": _jsonable(model.training_range_),
    }
    return doc


#: How a run of each status other than "succeeded" is told, after "1 run" / "N runs": none of
#: them measures the job's runtime (a failed or cut-off run stopped early; an excluded one was
#: left out by hand).
_STATUS_WORDS = {
    "failed": ("failed", "failed"),
    "killed": ("was killed", "were killed"),
    "incomplete": ("is incomplete", "are incomplete"),
    "running": ("is still running", "are still running"),
    "excluded": ("is excluded from training", "are excluded from training"),
}


def _named(run_ids: list[str], k: int = 3) -> str:
    """Up to ``k`` run ids as a command takes them, else the placeholder ``RUN_ID...``."""
    return " ".join(run_ids) if 0 < len(run_ids) <= k else "RUN_ID..."


def no_succeeded_run(raw_runs: pd.DataFrame) -> tuple[str, str]:
    """(what a job's runs are, what to do) for a job none of whose store rows succeeded, from
    its ``runs`` rows (``run_id``, ``status``; latest row per run): ``("1 run is incomplete
    (its event log ended before the application did, ...)", "ingest ...")``.

    One wording for every command that needs a succeeded run (fit and retrain, suggest,
    ``sparkpredict runs``), so that each says what the runs are and the fix that fits: an
    incomplete run did not fail, and an excluded one is brought back with ``--include``."""
    from .units import plural

    status = raw_runs["status"].where(raw_runs["status"].notna(), "unknown").astype(str)
    ids = {st: [str(r) for r in raw_runs["run_id"][status == st]] for st in status.unique()}
    ids.pop("succeeded", None)
    parts: list[str] = []
    for st in [*_STATUS_WORDS, *sorted(set(ids) - set(_STATUS_WORDS))]:
        n = len(ids.get(st, []))
        if not n:
            continue
        one, many = _STATUS_WORDS.get(st, (f"has status {st!r}", f"have status {st!r}"))
        part = f"{plural(n, 'run') if not parts else n} {one if n == 1 else many}"
        if st == "incomplete":  # not a failure: the record stops before the application did
            part += (f" ({'its' if n == 1 else 'their'} event log ended before the application did, "
                     f"as an in-progress or cut-off log does, or {'its' if n == 1 else 'their'} listener missed "
                     "events: Spark dropped them, or the listener failed on them)")
        parts.append(part)
    fixes = []
    if ids.get("excluded"):
        listed = "" if len(ids["excluded"]) <= 3 else "; `sparkpredict store summary` lists the excluded runs"
        fixes.append("include the runs to learn from again (sparkpredict store edit "
                     f"{_named(ids['excluded'])} --include{listed})")
    if ids.get("incomplete"):
        cut = ids["incomplete"]
        logs = (f"log of run {cut[0]}" if len(cut) == 1 else f"logs of runs {', '.join(cut)}" if len(cut) <= 3
                else "logs of the incomplete runs")
        fixes.append(f"ingest the complete event {logs} (sparkpredict ingest LOG: it replaces a cut copy "
                     "that ingest stored; a run whose listener missed events has no complete record: its "
                     "error message says so)")
    if ids.get("running"):
        fixes.append("let the running one end (its last record then says how it ended); a run whose "
                     "driver is gone for good stays running: `sparkpredict store edit RUN_ID --exclude "
                     "--ended` sets it aside")
    if ids.get("failed") or ids.get("killed"):
        fixes.append("fix what made its runs fail (`sparkpredict store summary` lists them), then record a "
                     "succeeded run: failed runs are no measure of the job's runtime")
    else:
        fixes.append(("or " if fixes else "") + "record a run of the job that succeeds")
    return ", ".join(parts) or "it has no runs", "; ".join(fixes)


def fit_stage_group(raw_runs: pd.DataFrame, stages: pd.DataFrame | None, tasks: pd.DataFrame | None,
                    *, random_state: int = 0) -> dict | None:
    """Fit one job's stage-level model (a random forest per stage signature, see
    :class:`sparkpredict.models.stages.StageRuntimeModel`); return its artifact document, or
    None when the job's runs have no stage rows (histories ingested without stages, C3O-like runs).

    The one stage-fitting function of both paths: the job's ``runs`` rows and its ``stages`` and
    ``tasks`` rows in any order (the model sorts them).
    """
    from .errors import DegenerateDataError
    from .features.runs import runs_table
    from .models.stages import StageRuntimeModel

    if stages is None or not len(stages):  # runs-only histories: no runs table to build
        return None
    raw = _normalize(raw_runs)
    job = str(raw["job"].dropna().iloc[0])
    valid = runs_table(raw)  # the runs a whole-job model would use: finished, with a wall time
    stages = _conform_rows("stages", stages)
    stages = stages[stages["run_id"].isin(valid["run_id"])]
    if stages.empty:
        return None
    if not (valid["input_bytes"].astype(float) > 0).any():
        # a stage model answers for an input size, and none of these runs read one (a shell's
        # in-memory data): its self-check, and every load of the store's stage models, failed
        return None
    tasks = _conform_rows("tasks", tasks)
    try:
        model = StageRuntimeModel(tables={"runs": raw, "stages": stages, "tasks": tasks},
                                  random_state=random_state).fit(valid[["run_id"]])
    except DegenerateDataError:
        return None  # stages without task times: nothing for a per-task forest to learn
    doc = R.make_artifact(job, R.KIND_STAGE, model.to_dict(),
                          trained_on=R.fingerprint(raw["run_id"], raw["updated_ms"]), trained_on_rows=len(raw))
    doc["meta"] = {"model_name": str(model.name_), "fit_kind": R.KIND_STAGE,
                   "cv_mape": _float_or_none(model.cv_mape_), "n_runs": int(model.n_runs_),
                   "training_range": _jsonable(model.training_range_),
                   "signatures": len(model.signatures_), "signature_forests": len(model.forests_)}
    return doc


#: One fit outcome: (job, model_kind, status, artifact JSON, error); status is "fit", "failed",
#: "unchanged" or "skipped" (a stage model for a job without stage rows).
Outcome = tuple[str, str, str, "str | None", "str | None"]


def fit_group_safe(raw_runs: pd.DataFrame, stages: pd.DataFrame | None = None,
                   tasks: pd.DataFrame | None = None, *, stage_models: bool = False,
                   runtime_model: bool = True, **kw: Any) -> list[Outcome]:
    """The job's whole-job model (``runtime_model``) and its stage model (``stage_models``); a
    job or model that cannot be fitted, whatever it raised, is a "failed" outcome: it does not
    stop the others, nor the other jobs' commit."""
    job = str(raw_runs["job"].iloc[0]) if len(raw_runs) else ""
    out: list[Outcome] = []
    if runtime_model:
        try:
            out.append((job, R.KIND_RUNTIME, "fit", json.dumps(fit_group(raw_runs, **kw), sort_keys=True), None))
        except _NOT_THE_JOBS:
            raise
        except Exception as exc:  # noqa: BLE001  # one job's odd rows must not stop every other job's commit
            out.append((job, R.KIND_RUNTIME, "failed", None, _worded(exc)))
    if stage_models:
        try:
            doc = fit_stage_group(raw_runs, stages, tasks, random_state=kw.get("random_state", 0))
            out.append((job, R.KIND_STAGE, "skipped", None, None) if doc is None
                       else (job, R.KIND_STAGE, "fit", json.dumps(doc, sort_keys=True), None))
        except _NOT_THE_JOBS:
            raise
        except Exception as exc:  # noqa: BLE001  # as above
            out.append((job, R.KIND_STAGE, "failed", None, _worded(exc)))
    return out


#: Faults of the machine, not of the job's runs: recorded as the job's failure they would keep
#: it from being refit (a failed fit is tried again only when its runs change) after a night
#: the disk filled or memory ran out.
_NOT_THE_JOBS = (MemoryError, OSError)


def _worded(exc: Exception) -> str:
    """A fit's error as the retrain records it, ``"ClassName: message"``: a foreign error's class
    (AttributeError) says it is a fault, and where to look, as its message alone does not."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _float_or_none(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def _jsonable(v: Any) -> Any:
    if v is None:
        return None
    return json.loads(json.dumps(v, default=lambda o: o.item() if hasattr(o, "item") else str(o)))
