"""The advisor's fitted models: which one answers for a job, and the caches that spare a refit.

This module owns what :class:`~sparkpredict.advice_source.HistorySource` asks for when it
builds a job's source from a store: the per-process cache (``_CACHE``) of models and sources,
the registry's model when it is current (:func:`registry_model`), otherwise a fit of the job's
runs (:func:`load_or_fit`: a whole-job model, or a replay with too few runs), kept as JSON under
``cache_dir()/advice`` per store version and code, so the next process loads it instead of
refitting; and :func:`prepare_advice`, which fits ahead of the next ``sparkpredict suggest``.
Nothing here imports pandas, numpy or scikit-learn at import time.
"""
from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger("sparkpredict.advise")

#: Models kept per process, (kind, path, version, job) -> model or HistorySource: a new store
#: version (new runs) refits; the oldest entries go beyond _CACHE_SIZE.
_CACHE: dict[tuple, Any] = {}
_CACHE_SIZE = 32


def _remember(key: tuple, value: Any) -> None:
    while len(_CACHE) >= _CACHE_SIZE:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = value


def prepare_advice(store: Any, run_ids: list[str], fitted: Mapping[str, Any] | None = None,
                   fitted_version: tuple | None = None) -> list[str]:
    """Fit (or load) the advice model of the jobs of ``run_ids`` (or application ids) on the store
    as it is now, so that the next ``sparkpredict suggest`` of those jobs, in any process, reads
    it from the cache instead of refitting (the refit's scikit-learn import alone takes about a
    second).

    ``fitted`` (job -> whole-job model fitted on the store's runs, e.g. by the demo) is kept as
    that job's fit instead of fitting again when ``fitted_version``, the store's ``version()``
    read before those runs were, is still the store's: a run committed in between would
    otherwise be missing from a fit kept as that of the store with it.

    Returns the jobs prepared. Never raises: a job that cannot be advised yet (one failed run,
    say) is left for the next suggest to explain.
    """
    # advice_source imports this module: HistorySource is imported here, not at the top
    from .advice_source import HistorySource
    from .config import resolve_store
    from .store import io as store_io

    try:
        st = store if hasattr(store, "read") else store_io.open(resolve_store(store))
        runs = st.runs()
        mine = runs["run_id"].isin(run_ids)
        if "app_id" in runs:  # a sweep knows its runs by Spark's application id
            mine |= runs["app_id"].isin(run_ids)
        jobs = sorted(set(runs.loc[mine, "job"].dropna().astype(str)))
    except Exception as exc:  # noqa: BLE001 -- a convenience; the run is recorded regardless
        log.info("advice not prepared: %s", exc)
        return []
    done = []
    for job in jobs:
        try:
            if fitted is not None and job in fitted and fitted_version is not None \
                    and fitted_version == st.version():
                version = fitted_version + (_registry_snapshot(st),)
                _save_fitted(_disk_key(st.path, version, job), fitted[job])
            HistorySource.resolve(job, store=st)
            done.append(job)
        except Exception as exc:  # noqa: BLE001
            log.info("advice for %s not prepared: %s", job, exc)
    return done


def _registry_snapshot(st: Any) -> str | None:
    """Name of the registry's current snapshot (changes with every retrain), if any."""
    from . import registry

    try:
        return registry.current_snapshot(st)
    except Exception:  # no registry yet, or unreadable: the model is then fitted from runs  # noqa: BLE001
        return None


def registry_model(job: str, st: Any, raw: pd.DataFrame, n_runs: int) -> tuple[Any, str | None, str | None]:
    """(the registry's whole-job model of ``job``, None, which one) when it is current, else
    (None, why not, None). Which one: its version, retrain and path, as the advice names its
    model's source (a registry model looked like any other fit).

    Current means what a retrain means by it (:func:`sparkpredict.registry.is_current`, in
    the model's own kind): trained on exactly the job's runs rows ``raw`` (their fingerprint), in
    this artifact, model and store format. A model that predates the job's latest runs would
    answer for an older history while the runs, the report and ``retrain --dry-run`` say
    otherwise: the caller fits from the runs instead, and says why (the second item; None when
    the job was simply never retrained). ``n_runs``: the job's usable runs, for that message.
    """
    from . import registry as R
    from .config import store_for_display

    # shown, not run: a URI's secret key stays out of what is printed and shared
    retrain = f"run `sparkpredict retrain --store {store_for_display(st.path)}` to bring the registry up to date"
    try:
        reg, failures = R.read_registry_state(st)
        mine = reg[(reg["job"] == job) & (reg["model_kind"] == R.KIND_RUNTIME)]
        if mine.empty:  # never retrained for this job: fit from its runs
            return None, None, None
        row = next(iter(R._rows(mine)))
        state = R.model_state(row)
        fp = R.runs_fingerprint(raw)
        if state[0] != fp:
            then = int(row.n_runs)
            # as many usable runs as then: a failed run came, or a run was edited
            changed = (f"it was trained on {then} runs, {n_runs} now" if then != n_runs else
                       f"the job's runs changed since: a run edited, or one that did not succeed added; "
                       f"{n_runs} usable then and now")
            why = (f"the registry's model of {job} predates its latest runs ({changed}): this advice is "
                   "from a model fitted on the current runs")
            failed = failures.get((job, R.KIND_RUNTIME))
            if failed is not None and failed.get("trained_on") == fp:
                # a retrain tried these very runs and could not fit them: another retrain would
                # skip them again, so the fix is the failure's own, not "run retrain"
                from .retrain_plan import _fit_error

                reason = _fit_error(failed.get("error"), failed.get("error_type"))[1]
                return None, f"{why}; the last retrain could not fit them: {reason}", None
            return None, f"{why}; {retrain}", None
        if not R.is_current(state, state[0], str(row.fit_kind), R.runtime_model_format()):
            other = ("of another format than this sparkpredict writes" if not R.is_current(
                state[:-1] + (True,), state[0], str(row.fit_kind), R.runtime_model_format())
                else f"fitted by another sparkpredict ({row.sparkpredict_version}; this is {R.fitted_by()})")
            return None, (f"the registry's model of {job} is {other}: this advice is from a model "
                          f"fitted on the job's runs; {retrain}"), None
        which = f"from the registry, version {int(row.version)} (retrain {row.retrain_id}, {row.fit_path} path)"
        # the registry's own load, as `load_models` does it: a damaged model then names its
        # artifact and the refit of this job, not the `sparkpredict fit` a model file's loader names
        return R.restore_runtime_model(st, row), None, which
    except Exception as exc:  # a broken registry must not stop advice: refit from the runs  # noqa: BLE001
        log.info("registry models of %s unusable (%s); fitting from its runs", st.path, exc)
        why = getattr(exc, "message", None) or str(exc)
        # the error's own fix where it has one: a damaged artifact needs --force, a damaged
        # snapshot file removing, which a plain retrain (as `retrain` said) did not do
        fix = getattr(exc, "fix", None) or retrain
        return None, (f"the registry's model of {job} is unusable ({why}): this advice is from a model "
                      f"fitted on the job's runs; {fix}"), None


def fitted_source(registry_passed_over: bool) -> str:
    """Where a model fitted on the store's runs came from, as the advice and the report say it;
    ``registry_passed_over``: the registry held one, and a note says why it was not used."""
    return "fitted on the store's runs" + ("" if registry_passed_over else
                                           " (no retrain has registered a model of the job)")


def load_or_fit(job: str, st: Any, version: tuple, runs: pd.DataFrame) -> Any:
    """The model of ``job`` fitted on its ``runs`` (see :func:`_fit`): the one an earlier process
    kept on disk for the same store ``version`` and code, else a fit now, kept for the next."""
    disk_key = _disk_key(st.path, version, job)
    model = _load_fitted(disk_key)
    if model is None:
        model = _fit(runs, st)
        _save_fitted(disk_key, model)
    return model


def _disk_key(store_path: str, version: tuple, job: str) -> str:
    from pathlib import Path

    from . import fitcache

    here = Path(__file__).resolve()
    # advice_source.py too: it reads the runs that are fitted, and held this code before the
    # split; units (the executor counts kept), config (local masters, parameter keys) and the
    # store's reader and schema (which row of a run counts) shape the fitted runs as well
    code = [here, here.parent / "advice_source.py", *fitcache.fit_code_files()]
    # scikit-learn fits the larger tables' boosting (small_gbm falls back to it), scipy the equations
    libs = fitcache.library_versions("numpy", "scipy", "scikit-learn")
    return fitcache.make_key(store_path, version, job, fitcache.code_stamp(*code), libs)


def _load_fitted(key: str) -> Any:
    """A whole-job model fitted earlier on the same committed runs (another process, e.g. the
    previous ``sparkpredict suggest``): JSON read with numpy only, no refit and no sklearn import."""
    import json

    from . import fitcache
    from .models.persist import checked_model

    # checked as a model file is at load: a damaged entry (a component of no kind, its defaults
    # emptied, a NaN bound) is refitted and kept anew (read() returns None on any error), where
    # the advice died at its first prediction with a bare AttributeError, or advised from NaN
    return fitcache.read("advice", key, "json", lambda f: checked_model(json.load(f)))


def _save_fitted(key: str, model: Any) -> None:
    import json

    from . import fitcache
    from .models.hybrid import JobRuntimeModel

    def dump(f: Any) -> None:
        f.write(json.dumps(model.to_dict(), separators=(",", ":")).encode())

    if isinstance(model, JobRuntimeModel):  # the replay reads the store; nothing to keep
        fitcache.write("advice", key, "json", dump)


def _fit(runs: pd.DataFrame, st: Any) -> Any:
    """The whole-job model; with too few runs for it, a replay of the recorded task timeline.

    The replay (stage-level, see :mod:`sparkpredict.models.simulate`) needs only one run, so a
    job recorded once still gets advice; its interval is wider and its name says what it is.
    """
    from .errors import DegenerateDataError
    from .models import persist

    try:
        return persist.fit_job(runs)
    except DegenerateDataError as exc:
        from .models.replay import ReplayRuntimeModel

        log.info("job has too few runs for the whole-job model (%s); replaying its tasks", exc)
        try:
            return ReplayRuntimeModel(store=st).fit(runs)
        except DegenerateDataError as replay_exc:
            # The whole-job model's reason (one executor count, no positive runtime) is the one
            # the user can act on; "no task rows" alone hid it.
            raise DegenerateDataError(
                f"{exc.message}; nor can a run be replayed: {replay_exc.message}",
                f"{exc.fix}" + (f", or {replay_exc.fix}" if replay_exc.fix else "")) from exc
