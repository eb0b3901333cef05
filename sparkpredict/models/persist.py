"""Fit one model per job and save/load them as JSON (no pickle, numpy-only load).

Layout of a model directory::

    MODEL_DIR/sparkpredict_models.json     {"format": "sparkpredict-models", "version": N,
                                            "jobs": {job: file name}, "skipped": {job: reason}}
    MODEL_DIR/job-<slug>.json              JobRuntimeModel.to_dict() of one job, + "job": its name

Writes are atomic per file (temporary name + rename) and the index is written last, so a
crash leaves the previous index (and its files) readable. Saving into a folder that holds
models replaces the fitted jobs' models and keeps the other jobs' (:func:`save_models`).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from typing import TYPE_CHECKING, Any

from ..errors import DegenerateDataError, InputError, ModelError, UnknownJobError
from ..outputs import check_outside_store, output_file, write_text
from .hybrid import FORMAT_VERSION, JobRuntimeModel

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)
INDEX = "sparkpredict_models.json"
INDEX_FORMAT = "sparkpredict-models"


def fit_job(runs_of_one_job: pd.DataFrame, random_state: int = 0, kind: str = "auto") -> JobRuntimeModel:
    """Fit the runtime model of one job (deterministic, independent of row order)."""
    return JobRuntimeModel(kind=kind, random_state=random_state).fit(runs_of_one_job)


def fit_all(runs: pd.DataFrame, random_state: int = 0, kind: str = "auto",
            skipped: dict[str, str] | None = None,
            fixes: dict[str, str] | None = None) -> dict[str, JobRuntimeModel]:
    """Fit every job of a runs table; jobs that cannot be fitted are logged and left out.

    Parameters
    ----------
    runs : DataFrame
        A runs table (``job`` column + features + ``runtime_s``).
    skipped : dict, optional
        Filled with ``job -> reason`` for the jobs left out.
    fixes : dict, optional
        Filled with ``job -> what to do about it`` for the jobs left out that have a fix.

    Raises
    ------
    InputError
        ``runs`` lacks a required column or has no rows.
    DegenerateDataError
        When no job at all can be fitted (the reasons are in the message).
    """
    from ..features.runs import check_runs_frame

    check_runs_frame(runs)
    out: dict[str, JobRuntimeModel] = {}
    reasons: dict[str, str] = {} if skipped is None else skipped
    all_fixes: set[str | None] = set()
    for job in sorted(runs["job"].astype(str).unique()):
        rows = runs[runs["job"].astype(str) == job]
        try:
            out[job] = fit_job(rows, random_state, kind)
        except DegenerateDataError as exc:
            reasons[job] = exc.message
            all_fixes.add(exc.fix)
            if fixes is not None and exc.fix:
                fixes[job] = exc.fix
            log.warning("job %r not fitted: %s", job, exc.message)
    if not out:
        detail = "; ".join(f"{j}: {r}" for j, r in list(reasons.items())[:5]) + (
            f"; and {len(reasons) - 5} more" if len(reasons) > 5 else "")
        # the jobs' own fix when they share one (e.g. declare the input size), as retrain says it
        fix = next(iter(all_fixes)) if len(all_fixes) == 1 else None
        raise DegenerateDataError(f"no job could be fitted ({detail})",
                                  fix or "record more runs: several executor counts and input sizes per job")
    return out


def _slug(job: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", job)[:60]
    return f"job-{safe}-{hashlib.sha1(job.encode()).hexdigest()[:8]}.json"


def check_model_dir(out_dir: str | os.PathLike[str]) -> None:
    """Raise :class:`InputError` unless ``out_dir`` can take saved models (creates nothing)."""
    d = str(out_dir)
    if not d.strip():  # os.makedirs('') failed after every fit, "No such file or directory: ''"
        raise InputError("the model folder is empty", "give a folder for the models, e.g. --out models/")
    check_outside_store(d)
    if os.path.exists(d) and not os.path.isdir(d):
        raise InputError(f"model output {d!r} is a file", "give a folder for --out")
    if os.path.isdir(d) and os.listdir(d) and not os.path.exists(os.path.join(d, INDEX)):
        raise InputError(f"folder {d!r} holds other files and no sparkpredict models",
                         "give an empty or new folder, or one written by `sparkpredict fit`")
    output_file(os.path.join(d, INDEX))  # unwritable, or a file where a folder should be
    from ..config import folder_problem

    # a probe: permission bits pass root everywhere, and /proc refuses even root (it was a
    # FileNotFoundError traceback from makedirs)
    why = folder_problem(d)
    if why:
        raise InputError(f"cannot write models to {d!r}: {why}", "give a folder you can write for --out")


def save_models(models: dict[str, JobRuntimeModel], out_dir: str | os.PathLike[str],
                skipped: dict[str, str] | None = None, kept: list[str] | None = None) -> str:
    """Save ``models`` (job -> fitted model) under ``out_dir``; returns the index path.

    A folder that already holds models keeps those of the other jobs (and of jobs in
    ``skipped`` that have one): refitting one job, e.g. from ``sparkpredict runs --job``,
    used to drop every other job's model without a word. ``kept``, if given, is filled with
    the jobs whose earlier models stay. Models of another format version are not kept (they
    could not be loaded). The job files are written first and the index last, each atomically,
    and files only the earlier index named are removed after it, so a crash at any point
    leaves an index whose files are all there.
    """
    d = str(out_dir)
    check_model_dir(d)
    os.makedirs(d, exist_ok=True)
    before = _earlier_index(d)
    files = {}
    for job, m in sorted(models.items()):
        name = _slug(job)
        # the job's name inside its file: a file copied over another job's is then refused
        write_text(os.path.join(d, name), json.dumps({**m.to_dict(), "job": job}, separators=(",", ":")))
        files[job] = name
    old_jobs, old_skipped, old_files = before
    others = sorted(j for j in old_jobs if j not in files)
    stays = [j for j in others if _is_model_file(d, old_jobs[j])]
    if len(stays) < len(others):  # kept, the index would name a file that is not there
        log.warning("model file(s) of %s missing from %r; those jobs are no longer listed",
                    ", ".join(j for j in others if j not in stays), d)
    files.update({j: old_jobs[j] for j in stays})
    reasons = {j: r for j, r in {**old_skipped, **(skipped or {})}.items() if j not in files}
    index = {"format": INDEX_FORMAT, "version": FORMAT_VERSION, "jobs": files, "skipped": reasons}
    path = os.path.join(d, INDEX)
    write_text(path, json.dumps(index, indent=1, sort_keys=True))
    for name in old_files - set(files.values()):  # a refitted job's file under an earlier name
        try:
            os.remove(os.path.join(d, name))
        except OSError as exc:  # the new index is written; a leftover file harms nothing
            log.warning("could not remove the replaced model file %r: %s", name, exc)
    if kept is not None:
        kept[:] = stays
    return path


#: What :func:`save_models` may remove: a job file it wrote, never a path elsewhere.
_MODEL_FILE = re.compile(r"job-[A-Za-z0-9._-]+\.json")


def _is_model_file(d: str, name: Any) -> bool:
    return isinstance(name, str) and bool(_MODEL_FILE.fullmatch(name)) and os.path.isfile(os.path.join(d, name))


def _earlier_index(d: str) -> tuple[dict[str, str], dict[str, str], set[str]]:
    """(job -> file, job -> reason not fitted, its job files) of the index already in ``d``,
    the first two empty when those models cannot be kept (none, corrupt, another version)."""
    path = os.path.join(d, INDEX)
    if not os.path.exists(path):
        return {}, {}, set()
    try:
        with open(path) as f:
            index = json.load(f)
    except (OSError, ValueError) as exc:
        log.warning("the model index %r cannot be read (%s); its models are not kept", path, exc)
        return {}, {}, set()
    jobs = index.get("jobs") if isinstance(index, dict) else None
    if not isinstance(jobs, dict) or index.get("format") != INDEX_FORMAT:
        log.warning("%r is not a sparkpredict model index; its models are not kept", path)
        return {}, {}, set()
    listed = {n for n in jobs.values() if isinstance(n, str) and _MODEL_FILE.fullmatch(n)}
    if index.get("version") != FORMAT_VERSION:
        log.warning("the models in %r have format version %s, not %s; they are replaced, not kept "
                    "(jobs: %s)", d, index.get("version"), FORMAT_VERSION, ", ".join(sorted(map(str, jobs))))
        return {}, {}, listed
    skipped = index.get("skipped")
    reasons = {str(j): str(r) for j, r in skipped.items()} if isinstance(skipped, dict) else {}
    return {str(j): n for j, n in jobs.items()}, reasons, listed


def _store_of(folder: str) -> str | None:
    """The history store ``folder`` is (its marker file there), or whose ``_models`` registry
    folder it is; None for any other folder."""
    from ..registry import MODELS_DIR
    from ..store.schema import MARKER_FILE

    folder = os.path.normpath(folder)
    if os.path.isfile(os.path.join(folder, MARKER_FILE)):
        return folder
    parent = os.path.dirname(folder)
    if os.path.basename(folder) == MODELS_DIR and os.path.isfile(os.path.join(parent, MARKER_FILE)):
        return parent
    return None


def store_given_as_models(model_dir: str | os.PathLike[str]) -> tuple[str, str] | None:
    """(the history store, the error's message) when ``model_dir``, holding no model index, is a
    store or its ``_models`` registry folder: a folder given where `sparkpredict fit`'s models
    belong. None otherwise. Each caller words the fix for how it was called (a flag of its own
    command, an argument from Python)."""
    if os.path.exists(os.path.join(str(model_dir), INDEX)):
        return None
    store = _store_of(str(model_dir))
    if store is None:
        return None
    # normalised as _store_of reads it: `st1/` (a shell's completion) is the store itself
    registry = store != os.path.normpath(str(model_dir))
    return store, (f"{str(model_dir)!r} is {'the model registry of ' if registry else ''}"
                   "a history store, not a folder of `sparkpredict fit` models")


def read_index(model_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The index of a model directory (checked for format and version)."""
    path = os.path.join(str(model_dir), INDEX)
    if not os.path.exists(path):
        given = store_given_as_models(model_dir)
        if given is not None:
            # load_models(STORE) said "fit them first" of a store whose registry held them; the
            # advice and `predict` catch this case first and name their own way to the registry
            store, message = given
            raise InputError(message, f"load the store's registry models with "
                             f"sparkpredict.registry.load_models({store!r}) (the models `sparkpredict "
                             "retrain` committed), or give the store to the advice as store=")
        raise InputError(f"no sparkpredict models in {str(model_dir)!r}",
                         "fit them first: `sparkpredict fit RUNS --out MODEL_DIR`")
    refit = "refit: `sparkpredict fit RUNS --out DIR`"
    try:
        with open(path) as f:
            index = json.load(f)
    except ValueError as exc:
        raise ModelError(f"model index {path!r} is corrupt: {exc}", refit) from exc
    except OSError as exc:
        raise ModelError(f"cannot read model index {path!r}: {exc.strerror or exc}",
                         "check its permissions (this user must be able to read the folder), or " + refit) from exc
    if not isinstance(index, dict) or index.get("format") != INDEX_FORMAT:
        raise ModelError(f"{path!r} is not a sparkpredict model index", "refit: `sparkpredict fit RUNS --out DIR`")
    if index.get("version") != FORMAT_VERSION:
        raise ModelError(f"models in {str(model_dir)!r} have format version {index.get('version')}; "
                         f"this sparkpredict reads version {FORMAT_VERSION}",
                         "refit them: `sparkpredict fit RUNS --out DIR`")
    jobs = index.get("jobs")
    # the right format, its list of jobs mangled: each job must name a file inside the folder
    if not isinstance(jobs, dict) or not all(isinstance(j, str) and isinstance(f, str) and _MODEL_FILE.fullmatch(f)
                                             for j, f in jobs.items()):
        raise ModelError(f"model index {path!r} is damaged: its \"jobs\" must map each job to a model file "
                         "in the folder", refit)
    return index


def load_models(model_dir: str | os.PathLike[str], jobs: list[str] | None = None) -> dict[str, JobRuntimeModel]:
    """Load saved models (all, or only ``jobs``) with numpy only.

    Raises
    ------
    UnknownJobError
        A job in ``jobs`` has no saved model (the message lists the known jobs).
    ModelError
        The index or a model file it lists is missing, corrupt or of another format version.
    """
    index = read_index(model_dir)
    files: dict[str, str] = index["jobs"]
    want = sorted(files) if jobs is None else list(jobs)
    unknown = [j for j in want if j not in files]
    if unknown:
        raise UnknownJobError(unknown_job_message(unknown, files, index.get("skipped", {})),
                              "fit the job first (`sparkpredict fit RUNS --out DIR`) or check the job name")
    return {job: _load_job(os.path.join(str(model_dir), files[job]), job) for job in want}


def _load_job(path: str, job: str) -> JobRuntimeModel:
    """``job``'s saved model; a missing, truncated or foreign file, or one that holds another
    job's model, is a :class:`ModelError` naming it (the index lists it, so the folder was
    damaged after `fit` wrote it). Files written before the job was recorded in them load."""
    fix = "refit the models: `sparkpredict fit RUNS --out DIR`"
    try:
        with open(path) as f:
            d = json.load(f)
    except FileNotFoundError as exc:
        raise ModelError(f"model file {path!r}, listed in the model index, is missing", fix) from exc
    except OSError as exc:
        raise ModelError(f"cannot read model file {path!r}: {exc.strerror or exc}", fix) from exc
    except ValueError as exc:  # not JSON, or not UTF-8
        raise ModelError(f"model file {path!r} is corrupt: {exc}", fix) from exc
    if not isinstance(d, dict):
        raise ModelError(f"model file {path!r} is not a sparkpredict job model", fix)
    if "job" in d and d["job"] != job:  # copied or renamed over this job's file
        raise ModelError(f"model file {path!r} holds the model of job {d['job']!r}, not of {job!r} "
                         "as the model index says", fix)
    try:
        model = JobRuntimeModel.from_dict(d)
        problem = _self_check(model)
    except ModelError as exc:  # wrong format or version: say which file
        raise ModelError(f"model file {path!r}: {exc.message}", exc.fix or fix) from exc
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:  # fields missing or mangled
        raise ModelError(f"model file {path!r} is corrupt: {type(exc).__name__}: {exc}", fix) from exc
    if problem:
        raise ModelError(f"model file {path!r} is corrupt: {problem}", fix)
    return model


def checked_model(d: dict) -> JobRuntimeModel:
    """``JobRuntimeModel.from_dict(d)`` given the check a model file gets at load
    (:func:`_self_check`), for a model saved elsewhere (a registry artifact, an entry of the
    advice's fit cache): a damaged one (a component of no kind, its defaults or training range
    emptied, a NaN parameter) loaded, and failed at its first prediction with a bare TypeError
    or AttributeError, or predicted NaN seconds.

    Raises
    ------
    ModelError
        "its model is corrupt: ..." when the check fails; the caller names where it was read
        and how to refit it. Mangled fields raise what ``from_dict`` raises.
    """
    model = JobRuntimeModel.from_dict(d)
    problem = _self_check(model)
    if problem:
        raise ModelError(f"its model is corrupt: {problem}", "refit it")
    return model


def _self_check(model: JobRuntimeModel) -> str | None:
    """What is wrong with a model read back, found before it advises: its training range, and
    one prediction in the middle of it, which must be finite. A file edited by hand (an
    equation's parameters cut short or NaN, a component of unknown kind, defaults emptied)
    loads field by field, and failed only at the first prediction, with a traceback or an
    infinite runtime. Raises what the prediction raises on mangled fields."""
    import math

    import numpy as np

    from .columns import is_range

    for col, (lo, hi) in model.training_range_.items():
        if not is_range(lo, hi):
            return f"its training range of {col} is [{lo}, {hi}]"
        if col in ("input_bytes", "executors") and lo <= 0:
            return f"its training range of {col} starts at {lo}, not above zero"
    X = {col: np.array([(lo * hi) ** 0.5 if lo > 0 else (lo + hi) / 2])
         for col, (lo, hi) in model.training_range_.items()}
    try:
        with np.errstate(all="ignore"):
            pred = model.predict_interval(X, 0.9)
    except InputError as exc:  # its training range lacks a column: a damaged model, not a query's fault
        return f"its check prediction failed: {exc.message}"
    # the bounds may be infinite (a model with too few runs for an interval); the runtime not
    runtime = float(np.asarray(pred["predicted_runtime_s"], dtype=float)[0])
    if not math.isfinite(runtime) or runtime < 0:
        return f"it predicts a runtime of {runtime} s in the middle of its own training range"
    return None


def unknown_job_message(unknown: list[str], known: Any, skipped: dict[str, str] | None = None) -> str:
    names = sorted(known)
    shown = ", ".join(names[:20]) + (f" … ({len(names)} in all)" if len(names) > 20 else "")
    msg = f"no model for job(s) {', '.join(map(repr, unknown))}; known jobs: {shown or '(none)'}"
    for j in unknown:
        if skipped and j in skipped:
            msg += f"; {j!r} was not fitted: {skipped[j]}"
    return msg
