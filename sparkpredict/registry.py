"""The model registry: versioned, pickle-free model artifacts and a registry table inside the store.

Layout (beside the history tables, under a ``_`` folder that Spark and the store's readers skip)::

    STORE/_models/artifacts/<job-dir>/<kind>-v<version>-<retrain_id>.json   one fitted model
    STORE/_models/registry/part-<commit ms>-<retrain_id>.parquet             one registry snapshot
    STORE/_models/running/<retrain_id>                                       a retrain writing artifacts
    STORE/_models/registry/commit.lock                                       the commit lock (flock)

Every retrain writes its new artifacts first (each under a hidden name, then renamed), then the
*whole* registry as one new snapshot file, hidden and renamed last. Readers use the snapshot with
the highest name, and a snapshot is named when it is committed (``part-<commit ms>-<retrain_id>``,
after every name it saw), so the rename is the single commit point and the later commit is the
current one. A retrain commits its rows on top of the registry as it is at that moment, not as
it was when the retrain started, so an overlapping retrain's rows for other jobs are kept, and
under a lock, so no other commit lands between its reading and its rename
(:func:`sparkpredict.registry_commit.commit_update`). A retrain that dies before the rename leaves only unreferenced
artifacts (``sparkpredict store clean`` removes them, :func:`sparkpredict.registry_commit.orphans`), and the previous registry
stays the current one. Snapshots are kept (the newest :data:`KEEP_SNAPSHOTS`) so a bad retrain
can be rolled back by deleting its snapshot file.

Artifacts are JSON only (``json.loads``; nothing is unpickled or imported by name from a file).
Each carries ``artifact_version``; an artifact of another version is refused with a message that
says how to refit it, and :mod:`sparkpredict.retrain` refits such jobs on its next run.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shlex
import uuid
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from . import __version__
from .errors import (
    DegenerateDataError,
    InputError,
    ModelError,
    SparkPredictError,
    StoreError,
    UnknownJobError,
)
from .store import io as store_io
from .store import schema as S

if TYPE_CHECKING:
    import pandas as pd

    from .models.persist import JobRuntimeModel
    from .models.stages import StageRuntimeModel

log = logging.getLogger(__name__)

#: Bumped whenever the artifact JSON layout (or the meaning of a model's ``to_dict``) changes.
ARTIFACT_VERSION = 1
ARTIFACT_FORMAT = "sparkpredict-model"
#: Bumped whenever a registry column is added, removed or changes meaning.
REGISTRY_VERSION = 1
MODELS_DIR = "_models"
KEEP_SNAPSHOTS = 10

#: Model kinds the registry knows; a kind maps to a fixed loader (never to a name read from a file).
KIND_RUNTIME = "runtime"
KIND_STAGE = "stage"

REGISTRY_SCHEMA = pa.schema([
    ("job", pa.string()),
    ("model_kind", pa.string()),            # KIND_RUNTIME or KIND_STAGE
    ("signature", pa.string()),             # "": the model covers the whole job (a stage model
                                            # holds one forest per stage signature inside)
    ("version", pa.int64()),                # 1, 2, ... per (job, model_kind, signature)
    ("trained_at_ms", pa.int64()),          # epoch ms when the model was fitted
    ("n_runs", pa.int64()),                 # runs the model was fitted on
    ("cv_mape", pa.float64()),              # cross-validated MAPE (fraction, not %)
    ("model_name", pa.string()),            # the model the job's fit selected (name_)
    ("fit_kind", pa.string()),              # the kind asked of the fit ("auto", an equation, ...)
    ("training_range_json", pa.string()),   # JSON of the model's training_range_
    ("trained_on", pa.string()),            # fingerprint of the job's runs: sha256 of run_id:updated_ms
    ("trained_on_rows", pa.int64()),        # run rows covered by the fingerprint
    ("artifact", pa.string()),              # path of the artifact, relative to STORE/_models
    ("artifact_version", pa.int32()),
    ("model_format_version", pa.int32()),   # the model's own to_dict format version
    ("store_schema_version", pa.int32()),
    ("sparkpredict_version", pa.string()),
    ("retrain_id", pa.string()),            # the retrain that fitted this row
    ("fit_path", pa.string()),              # "local" or "spark"
    ("registry_version", pa.int32()),
])
KEY = ["job", "model_kind", "signature"]
#: A model that could not be fitted is recorded as a row of model kind ``failed:<kind>``
#: (:func:`failed_kind`): the fingerprint of the runs it failed on, the formats and fit kind, the
#: error. These rows live in the snapshot's Parquet metadata under :data:`FAILED_FITS_KEY`, not
#: in its table: they are committed by the same rename as the models, while :func:`read_registry`,
#: the loaders, ``store clean`` and older sparkpredicts see only models. A retrain does not try
#: such a model again until its runs change (:func:`read_registry_state`; docs/retrain.md).
FAILED_PREFIX = "failed:"
FAILED_FITS_KEY = b"failed_fits"


# ---- small helpers ------------------------------------------------------------------------------
def _open(store: Any) -> store_io.Store:
    return store if isinstance(store, store_io.Store) else store_io.open(store)


def _base(store: store_io.Store) -> str:
    return f"{store.root.rstrip('/')}/{MODELS_DIR}"


def new_retrain_id() -> str:
    """Time-ordered and unique: snapshot names sort in commit order."""
    return store_io.new_batch_id("retrain")


def fingerprint(run_ids: Iterable[str], updated_ms: Iterable[Any]) -> str:
    """What a model was trained on: sha256 over the sorted ``run_id:updated_ms`` lines.

    Both retrain paths call this function (the Spark path on its executors); a null or NaN
    ``updated_ms`` is the empty string, so the nullable-int-as-float reading gives the same text.
    """
    lines = sorted(f"{r}:{_int_text(u)}" for r, u in zip(run_ids, updated_ms))
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def runs_fingerprint(raw: pd.DataFrame) -> str:
    """:func:`fingerprint` of one job's ``runs`` rows as :meth:`Store.runs` gives them (the latest
    row per run): what a retrain records as ``trained_on``, and what retrain and advice compare it
    with to tell whether the job's runs changed since.

    A run still ``running`` is left out: no model learns from it yet, and its row changes with
    every flush, so each run in flight made the registry's model look stale (advice then
    refitted, and warned that the model predated runs it had in fact seen all of). Its final
    row, once it ends, changes the fingerprint."""
    rows = raw[raw["run_id"].notna()]
    if "status" in rows:
        rows = rows[rows["status"] != "running"]
    return fingerprint(rows["run_id"], rows["updated_ms"])


def _int_text(v: Any) -> str:
    if v is None:
        return ""
    try:
        if v != v:  # NaN from a nullable int column read as float  # noqa: PLR0124
            return ""
    except TypeError:
        pass
    return str(int(v))


def job_dir(job: str) -> str:
    """A file-system-safe, collision-free folder name for any job key."""
    slug = re.sub(r"[^A-Za-z0-9._-]", "_", job)[:60].lstrip(".") or "job"
    return f"{slug}-{hashlib.sha256(job.encode()).hexdigest()[:10]}"


def artifact_relpath(job: str, kind: str, version: int, retrain_id: str, signature: str = "") -> str:
    sig = f"-{hashlib.sha256(signature.encode()).hexdigest()[:10]}" if signature else ""
    return f"artifacts/{job_dir(job)}/{kind}{sig}-v{version}-{retrain_id}.json"


def _put_atomic(fs: pafs.FileSystem, dest: str, data: bytes) -> None:
    d, name = dest.rsplit("/", 1)
    fs.create_dir(d, recursive=True)
    tmp = f"{d}/.{name}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        with fs.open_output_stream(tmp) as f:
            f.write(data)
        fs.move(tmp, dest)
    except BaseException:
        try:
            fs.delete_file(tmp)
        except OSError:
            pass
        raise


# ---- artifacts ----------------------------------------------------------------------------------
def make_artifact(job: str, kind: str, model_dict: dict, *, signature: str = "",
                  trained_on: str = "", trained_on_rows: int = 0) -> dict:
    """The JSON document one artifact file holds (before version and paths are assigned)."""
    return {
        "format": ARTIFACT_FORMAT,
        "artifact_version": ARTIFACT_VERSION,
        "store_schema_version": S.SCHEMA_VERSION,
        "sparkpredict_version": fitted_by(),
        "job": job,
        "kind": kind,
        "signature": signature,
        "trained_on": trained_on,
        "trained_on_rows": int(trained_on_rows),
        "model_format_version": model_dict.get("version"),
        "model": model_dict,
    }


def write_artifact(store: Any, relpath: str, doc: dict) -> None:
    """Write one artifact atomically (hidden name, then rename)."""
    st = _open(store)
    # allow_nan: models may hold inf bounds; Python reads NaN/Infinity back exactly.
    data = json.dumps(doc, sort_keys=True).encode()
    try:
        _put_atomic(st.fs, f"{_base(st)}/{relpath}", data)
    except OSError as exc:
        raise StoreError(f"cannot write model artifact to store {st.path!r}: {exc}",
                         "choose a writable store, or fix its permissions") from exc


def read_artifact(store: Any, relpath: str, job: str | None = None) -> dict:
    """Read and check one artifact (of ``job``, when known: the fix then refits just that
    job); refuses other formats and versions with a fix hint."""
    st = _open(store)
    path = f"{_base(st)}/{relpath}"
    try:
        with st.fs.open_input_stream(path) as f:
            doc = json.loads(f.read().decode())
    except (OSError, FileNotFoundError) as exc:
        raise StoreError(f"model artifact {relpath!r} is missing from store {st.path!r}",
                         f"run `sparkpredict retrain --store {st.path}`: it refits the jobs whose "
                         "artifacts are missing") from exc
    except ValueError as exc:
        raise ModelError(f"model artifact {relpath!r} is not valid JSON",
                         refit_fix(st.path, job)) from exc
    if not isinstance(doc, dict) or doc.get("format") != ARTIFACT_FORMAT:
        raise ModelError(f"{relpath!r} is not a sparkpredict model artifact",
                         "remove foreign files from the store's _models folder")
    check_artifact_version(doc.get("artifact_version"), doc.get("job", "?"), st.path)
    return doc


def refit_fix(store_path: str, job: str | None) -> str:
    """The fix for a damaged model: refit its job alone (every job when it is not known)."""
    if job is None:
        return f"run `sparkpredict retrain --store {shlex.quote(store_path)} --force` to refit every job"
    return f"refit it: `sparkpredict retrain --store {shlex.quote(store_path)} --job {shlex.quote(str(job))} --force`"


def check_artifact_version(version: Any, job: str, store_path: str) -> None:
    if version == ARTIFACT_VERSION:
        return
    if isinstance(version, int) and version > ARTIFACT_VERSION:
        raise ModelError(
            f"the model of job {job!r} was written by a newer sparkpredict (artifact version {version}; "
            f"this one reads {ARTIFACT_VERSION})", "upgrade sparkpredict")
    raise ModelError(
        f"the model of job {job!r} has artifact version {version}, older than this sparkpredict's "
        f"{ARTIFACT_VERSION}, and is not loaded",
        f"run `sparkpredict retrain --store {store_path}`: it refits jobs whose models are of an older format")


# ---- the registry table -------------------------------------------------------------------------
def empty_registry() -> pd.DataFrame:
    return REGISTRY_SCHEMA.empty_table().to_pandas()


def _snapshots(st: store_io.Store) -> list[str]:
    sel = pafs.FileSelector(f"{_base(st)}/registry", allow_not_found=True)
    names = [i.base_name for i in st.fs.get_file_info(sel)
             if i.type == pafs.FileType.File and i.base_name.startswith("part-")
             and i.base_name.endswith(".parquet")]
    return sorted(names)


def current_snapshot(store: Any) -> str | None:
    """File name of the committed registry snapshot, or None before the first retrain."""
    names = _snapshots(_open(store))
    return names[-1] if names else None


def _read_snapshot(st: store_io.Store, name: str, columns: list[str] | None = None) -> pa.Table:
    path = f"{_base(st)}/registry/{name}"
    try:
        table = pq.read_table(path, filesystem=st.fs, columns=columns)
    except Exception as exc:  # pyarrow raises several types for broken files
        raise StoreError(f"registry snapshot {path!r} is unreadable: {exc}", _SNAPSHOT_FIX) from exc
    raw = (table.schema.metadata or {}).get(b"registry_version", b"0")
    try:
        version = int(raw)
    except ValueError:  # a footer edited or damaged: a bare ValueError reached the user
        raise StoreError(f"registry snapshot {path!r} is damaged: its registry_version {raw!r} is "
                         "not a number", _SNAPSHOT_FIX) from None
    if version != REGISTRY_VERSION:
        raise ModelError(
            f"the model registry in {st.path!r} has version {version}; this sparkpredict reads "
            f"{REGISTRY_VERSION}",
            f"run `sparkpredict retrain --store {st.path} --force` to rebuild it")
    return _checked_snapshot(table, path, columns)


#: What to do about a registry snapshot that cannot be read as this version writes it.
_SNAPSHOT_FIX = "delete that file to fall back to the previous snapshot, then retrain"
#: Columns every row of a snapshot has a value in (a null signature is ""): what retrain and the merge key and count on.
_SNAPSHOT_REQUIRED = ("job", "model_kind", "version")


def _checked_snapshot(table: pa.Table, path: str, columns: list[str] | None) -> pa.Table:
    """``table`` (the ``columns`` read, default all) with REGISTRY_SCHEMA's types. A snapshot that
    lacks a column, holds one of another type, or a row without its job, kind or version is damaged
    (edited by hand, another file saved under a snapshot's name): load_models, retrain and the
    commit's merge had raised a bare AttributeError, KeyError or ValueError from deep inside."""
    wanted = REGISTRY_SCHEMA.names if columns is None else columns
    missing = [c for c in wanted if c not in table.column_names]
    if missing:
        raise StoreError(f"registry snapshot {path!r} is damaged: it has no column(s) "
                         f"{', '.join(missing)}", _SNAPSHOT_FIX)
    try:
        table = table.select(wanted).cast(pa.schema([REGISTRY_SCHEMA.field(c) for c in wanted]),
                                          safe=True).replace_schema_metadata(table.schema.metadata)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        raise StoreError(f"registry snapshot {path!r} is damaged: a column is not of the type "
                         f"sparkpredict writes: {exc}", _SNAPSHOT_FIX) from exc
    empty = [c for c in _SNAPSHOT_REQUIRED if c in wanted and table.column(c).null_count]
    if empty:
        raise StoreError(f"registry snapshot {path!r} is damaged: row(s) without a value in "
                         f"{', '.join(empty)}", _SNAPSHOT_FIX)
    return table


def read_registry(store: Any) -> pd.DataFrame:
    """The current registry: one row per (job, model_kind, signature), columns of REGISTRY_SCHEMA."""
    st = _open(store)
    name = current_snapshot(st)
    if name is None:
        return empty_registry()
    return _read_snapshot(st, name).to_pandas()


def failed_kind(kind: str) -> str:
    """The ``model_kind`` of the record of a failed fit of a ``kind`` model."""
    return FAILED_PREFIX + kind


def failed_fits(table: pa.Table) -> list[dict]:
    """The failed-fit records a snapshot carries (see :data:`FAILED_FITS_KEY`): [] in one
    written before they were recorded. An unreadable record is dropped: its fit is tried again."""
    raw = (table.schema.metadata or {}).get(FAILED_FITS_KEY)
    if not raw:
        return []
    try:
        recs = json.loads(raw)
    except ValueError:
        return []
    return [r for r in recs if isinstance(r, dict) and isinstance(r.get("job"), str)
            and str(r.get("model_kind", "")).startswith(FAILED_PREFIX)] if isinstance(recs, list) else []


def present_artifacts(store: Any) -> set[str] | None:
    """The artifacts (paths relative to ``STORE/_models``) that are there and not empty: a
    retrain judges a registry row whose artifact is gone as stale, so that it refits the job
    the advice could not load (it had taken the row as current, and refit nothing)."""
    import pyarrow.fs as pafs

    st = _open(store)
    base = _base(st)
    try:
        infos = st.fs.get_file_info(pafs.FileSelector(f"{base}/artifacts", recursive=True, allow_not_found=True))
    except OSError:  # not known: no row is judged by its file (an empty set would refit all)
        return None
    return {i.path[len(base) + 1:] for i in infos if i.type == pafs.FileType.File and (i.size or 0) > 0}


def read_registry_state(store: Any) -> tuple[pd.DataFrame, dict[tuple[str, str], dict]]:
    """The current registry (as :func:`read_registry`) and its failed fits, both of one snapshot:
    ``{(job, model_kind): record}``, ``model_kind`` the kind that failed (``runtime``, ``stage``),
    the record a registry row's fields (``trained_on``: the runs it failed on) and ``error``."""
    st = _open(store)
    name = current_snapshot(st)
    if name is None:
        return empty_registry(), {}
    table = _read_snapshot(st, name)
    fails = {(r["job"], str(r["model_kind"])[len(FAILED_PREFIX):]): r for r in failed_fits(table)}
    return table.to_pandas(), fails


def _rows(reg: pd.DataFrame) -> Iterable[Any]:
    """``reg.itertuples(index=False)``: pandas-stubs type every field as any scalar (None, NaT,
    Interval, ...), where REGISTRY_SCHEMA fixes each column's type."""
    return reg.itertuples(index=False)


def fitted_by() -> str:
    """This sparkpredict as the registry records the fitter of a model: its version and, as a
    PEP 440 local label, a hash of the code that shapes a fit (``0.4.0+fit.3f2a9c1b7e40``).

    The formats' version numbers say how an artifact is laid out, not what its numbers mean:
    a change of what a forest learns (ms per task instead of a rate) kept the stage format, and
    an older model then loaded and predicted 2.4x too low, while ``retrain`` called it current.
    A model fitted by other code is refit by the next retrain, and not trusted by the advice."""
    from .fitcache import fit_code_hash

    return f"{__version__}+fit.{fit_code_hash()}"


def model_state(row: Any) -> tuple:
    """What decides whether a registry row's model is current: (trained_on, artifact_version,
    model_format_version, store_schema_version, fit_kind, fitted by this code), from a row or a
    record dict. The last is judged here, where the registry is read: Spark's workers, which
    judge the states they are shipped, may hold the code zipped."""
    get = row.get if isinstance(row, dict) else lambda k: getattr(row, k)
    return (get("trained_on"), _int(get("artifact_version")), _int(get("model_format_version")),
            _int(get("store_schema_version")), get("fit_kind"), fitted_here(get("sparkpredict_version")))


def fitted_here(version: Any) -> bool:
    """A model recorded as fitted by ``version`` was fitted by this code. Where one side's code
    could not be hashed (``+fit.unknown``: a zipped package), the same release counts: a zipped
    driver and an installed CLI would otherwise each refit what the other fitted, forever."""
    mine = fitted_by()
    if version == mine:
        return True
    release = f"{__version__}+fit."
    return (isinstance(version, str) and version.startswith(release)
            and "unknown" in (version[len(release):], mine[len(release):]))


def is_current(state: tuple | None, fp: str, kind: str, model_format: int) -> bool:
    """A model of ``state`` (:func:`model_state`) was fitted on the runs of fingerprint ``fp``,
    by this artifact, model and store format and this code (:func:`fitted_by`), as model kind
    ``kind``. Retrain refits what is not current; advice does not trust it (see docs/retrain.md,
    incremental refits)."""
    return state == (fp, ARTIFACT_VERSION, model_format, S.SCHEMA_VERSION, kind, True)


def _int(v: Any) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


# ---- loading models -----------------------------------------------------------------------------
def runtime_model_format() -> int:
    """The format version of whole-job models this sparkpredict writes and reads."""
    from .models.hybrid import FORMAT_VERSION

    return int(FORMAT_VERSION)


def _check_model_format(doc: dict, store_path: str) -> None:
    model = doc.get("model")
    if not isinstance(model, dict) or "version" not in model:
        # not a model of any format: damaged, which the restore names with the refit of its job
        # (a plain retrain would judge the registry row, not this file, current)
        return
    v = model["version"]
    if v != runtime_model_format():
        raise ModelError(
            f"the model of job {doc.get('job')!r} has model format version {v}; this sparkpredict reads "
            f"{runtime_model_format()}",
            f"run `sparkpredict retrain --store {store_path}`: it refits models of another format")


def _runtime_model_from_dict(d: dict) -> JobRuntimeModel:
    from .models.persist import checked_model

    return checked_model(d)


def _names(jobs: Iterable[str] | str) -> list[str]:
    """Job names as a list: one name given as a string is that job, not its letters ("sort" read
    as 's', 'o', 'r', 't')."""
    return [jobs] if isinstance(jobs, str) else list(jobs)


def load_models(store: Any = None, jobs: Iterable[str] | str | None = None) -> dict[str, JobRuntimeModel]:
    """The current whole-job runtime model of every job in the registry.

    Parameters
    ----------
    store : str, path or Store, optional
        The history store (default: the configured store).
    jobs : iterable of str, optional
        Load only these jobs; a job with no registered model raises :class:`UnknownJobError`.

    Returns
    -------
    dict
        job -> fitted ``JobRuntimeModel``. Empty when the store was never retrained.

    Raises
    ------
    ModelError
        An artifact of an older or newer format (the message says to run ``sparkpredict retrain``).

    A folder written by ``sparkpredict fit`` (:func:`sparkpredict.models.persist.load_models`)
    is loaded as such: both are "the models", and this is the one ``sparkpredict`` exports.
    """
    if isinstance(store, (str, os.PathLike)):
        from .models import persist

        if os.path.isfile(os.path.join(os.fspath(store), persist.INDEX)):
            return persist.load_models(store, None if jobs is None else _names(jobs))
    st = _open(store)
    reg = read_registry(st)
    reg = reg[reg.model_kind == KIND_RUNTIME]
    if jobs is not None:
        wanted = _names(jobs)
        missing = sorted(set(wanted) - set(reg.job))
        if missing:
            raise UnknownJobError(f"no trained model for job(s) {missing[:5]} in {st.path!r}",
                                  f"run `sparkpredict retrain --store {st.path}` after recording runs")
        reg = reg[reg.job.isin(wanted)]
    return {row.job: restore_runtime_model(st, row) for row in _rows(reg)}


def restore_runtime_model(store: Any, row: Any) -> JobRuntimeModel:
    """The whole-job runtime model of one registry row (a row of :func:`read_registry`): its
    artifact read, checked and built.

    Raises
    ------
    SparkPredictError
        Of the kind the failure is, naming the artifact and its fix: a missing artifact a plain
        ``retrain``, a damaged one the refit of its job (``--job J --force``), another format
        the retrain that refits it. Never a bare KeyError or AttributeError from inside.
    """
    st = _open(store)
    check_artifact_version(_int(row.artifact_version), row.job, st.path)  # a null: refit
    doc = read_artifact(st, row.artifact, row.job)
    _check_model_format(doc, st.path)
    return _restore(_runtime_model_from_dict, doc, row, st)


def load_stage_models(store: Any = None, jobs: Iterable[str] | str | None = None) -> dict[str, StageRuntimeModel]:
    """The current stage-level model of every job that has one, keyed by job.

    A stage model keeps the ids of its training runs, not their stages and tasks: those are read
    from ``store`` again (they are what a replay needs). A model whose runs are no longer all in
    the store is refused (:class:`DegenerateDataError`, "refit it").
    """
    from .models.stages import STAGE_FORMAT_VERSION, StageRuntimeModel

    st = _open(store)
    reg = read_registry(st)
    reg = reg[reg.model_kind == KIND_STAGE]
    if jobs is not None:
        reg = reg[reg.job.isin(_names(jobs))]
    else:
        # every job's: one of another format (an older sparkpredict's, which no retrain replaces
        # where this one fits none) is left out with a word, not an error for all of them
        other = reg[reg.model_format_version.notna() & (reg.model_format_version != STAGE_FORMAT_VERSION)]
        if len(other):
            log.warning("stage models of another format left out (%s): an older sparkpredict fitted them; "
                        "`sparkpredict retrain --store %s` refits those it can", ", ".join(sorted(map(str, other.job))),
                        st.path)
            reg = reg.drop(index=other.index)
    out: dict[str, StageRuntimeModel] = {}
    for row in _rows(reg):
        doc = read_artifact(st, row.artifact, row.job)
        out[row.job] = _restore(lambda d: StageRuntimeModel.from_dict(d, store=st), doc, row, st)
    return out


def _restore(load: Callable[[dict], Any], doc: dict, row: Any, st: store_io.Store) -> Any:
    """``load(doc["model"])``, its errors naming the artifact: a damaged one is one error with a
    fix, as a damaged model file of `sparkpredict fit` is, not a bare KeyError from inside."""
    where = f"model artifact {row.artifact!r} of job {row.job!r}"
    fix = refit_fix(st.path, row.job)
    try:
        return load(doc["model"])
    except (ModelError, DegenerateDataError, InputError) as exc:
        # damaged, or its runs gone from the store: refitting this job is the fix, whatever
        # generic refit the loader named (a stage model's said `retrain --force`, no store)
        raise type(exc)(f"{where}: {exc.message}", fix) from exc
    except SparkPredictError as exc:  # kept of its kind: a caller may tell them apart
        raise type(exc)(f"{where}: {exc.message}", exc.fix or fix) from exc
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise ModelError(f"{where} is corrupt: {type(exc).__name__}: {exc}", fix) from exc


def load_artifacts(store: Any = None, kind: str | None = None) -> dict[tuple[str, str, str], dict]:
    """Raw artifact documents keyed by (job, model_kind, signature), e.g. for stage models."""
    st = _open(store)
    reg = read_registry(st)
    if kind is not None:
        reg = reg[reg.model_kind == kind]
    return {(r.job, r.model_kind, r.signature): read_artifact(st, r.artifact, r.job)
            for r in _rows(reg)}


__all__ = [
    "ARTIFACT_VERSION",
    "KIND_RUNTIME",
    "KIND_STAGE",
    "REGISTRY_SCHEMA",
    "artifact_relpath",
    "current_snapshot",
    "failed_fits",
    "failed_kind",
    "fingerprint",
    "fitted_by",
    "is_current",
    "load_artifacts",
    "load_models",
    "load_stage_models",
    "make_artifact",
    "model_state",
    "new_retrain_id",
    "read_artifact",
    "read_registry",
    "read_registry_state",
    "restore_runtime_model",
    "runs_fingerprint",
    "write_artifact",
]
