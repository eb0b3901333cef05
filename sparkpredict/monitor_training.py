"""The slowdown monitor's training side: a store's stages labelled and compared with their clean
baselines (:func:`labelled_stages`), and the :class:`DegradationModel` trained on them
(:func:`fit_monitor`, :func:`cached_monitor`, :func:`default_model`).

How the monitor works is told in :mod:`sparkpredict.monitor`, which re-exports these names;
explaining a run is in :mod:`sparkpredict.monitor_explain`.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from . import monitor_baseline as MB
from .errors import DegenerateDataError
from .features.interference import interference_labels, stage_features, with_baseline
from .models.degradation import DegradationModel
from .units import plural

if TYPE_CHECKING:
    import pandas as pd

    from .store.io import Store

__all__ = ["DEFAULT_TRAINING_STORE", "MIN_CLEAN_RUNS", "MIN_INTERFERED_RUNS", "cached_monitor", "default_model",
           "fit_monitor", "labelled_stages", "run_labels"]
# the name it logged under before the split, so that a logging setup aimed at it still applies
log = logging.getLogger("sparkpredict.monitor")

#: Default training data: the labelled dataset shipped with the package (see its NOTES.md).
DEFAULT_TRAINING_STORE = Path(__file__).resolve().parent / "data" / "interference" / "store"
#: Fewest interfered runs (labelled other than ``none``) and clean runs (labelled ``none``), of
#: jobs that have both, that the monitor is trained on: :func:`default_model` trains on a
#: user's store from these on, and :func:`fit_monitor` refuses fewer. On 2 interfered runs the
#: model learnt next to nothing and still named a slowdown and a cause.
MIN_INTERFERED_RUNS = 5
MIN_CLEAN_RUNS = 2


def run_labels(runs: pd.DataFrame) -> pd.Series:
    """:func:`interference_labels`, with a blank label read as none: a script that passes
    ``--conf spark.sparkpredict.interference=$LABEL`` with LABEL unset means no label, and an
    empty one made the job "labelled", so that only runs labelled ``none`` counted as clean."""
    labels = interference_labels(runs)
    return labels.map(lambda v: (v.strip() or None) if isinstance(v, str) else None).astype(object)


def _trainable_runs(runs: pd.DataFrame) -> tuple[int, int]:
    """(interfered, clean) runs the monitor can learn from: labelled runs of jobs that have a
    clean one (an interfered run teaches only beside clean runs of its own job) that succeeded
    or are incomplete, as :func:`labelled_stages` keeps them."""
    import pandas as pd

    if "status" in runs:
        runs = runs[runs["status"].isin(["succeeded", "incomplete"]) | runs["status"].isna()]
    labels = pd.Series(run_labels(runs).to_numpy(), index=runs["job"].to_numpy()).dropna()
    labels = labels[labels.index.isin(set(labels[labels == "none"].index))]
    return int((labels != "none").sum()), int((labels == "none").sum())


# ---- from a store ------------------------------------------------------------------------
def labelled_stages(store: Store, jobs: list[str] | None = None,
                    run_ids: list[str] | None = None) -> pd.DataFrame:
    """Stage features of every run in ``store`` (or of ``jobs``), with baselines and labels.

    Columns of :func:`with_baseline` plus ``job`` and ``label`` (the run's interference label,
    :func:`run_labels`: a blank one is none). Each job's clean runs are those labelled ``none``.
    A run of a job without labels is compared with the job's runs of its setup, or with all of
    them where too few ran that setup (:func:`sparkpredict.monitor_baseline.choose`). So is a
    run of a labelled job that has no other run labelled ``none``, among the job's runs not
    labelled as interfered with: one run labelled ``cpu:1`` does not leave the job's unlabelled
    history without a use. Only succeeded and incomplete runs serve as
    clean runs or training data; a failed or killed run is included when ``run_ids`` names it,
    so that its completed stages can be explained. With ``run_ids``, the rows are those runs'
    only (their baselines' runs are read, not compared in turn).
    """
    return _stages_and_baselines(store, jobs, run_ids)[0]


def _stages_and_baselines(store: Store, jobs: list[str] | None = None, run_ids: list[str] | None = None
                          ) -> tuple[pd.DataFrame, dict[str, MB.Baseline]]:
    """:func:`labelled_stages`, and the baseline each of its runs was compared with."""
    from dataclasses import replace

    runs = store.runs()
    usable = runs["status"].isin(["succeeded", "incomplete"]) | runs["status"].isna()
    # A failed or killed run's completed stages compare with the clean runs' as any run's do
    # (stage_features keeps only succeeded stage attempts), but what it did not finish must
    # never become a baseline.
    asked_ids = set(run_ids or [])
    asked = runs["run_id"].isin(asked_ids)
    baseline_ok = set(runs.loc[usable, "run_id"])
    runs = runs[usable | asked]
    if jobs is not None:
        runs = runs[runs["job"].isin(jobs)]
    labels = run_labels(runs)
    ids = runs["run_id"].tolist()
    feats = stage_features(store.read("stages", run_ids=ids), store.read("tasks", run_ids=ids),
                           store.read("host_samples", run_ids=ids))
    job_of = dict(zip(runs["run_id"], runs["job"]))
    feats["job"] = feats["run_id"].map(job_of)
    feats["label"] = feats["run_id"].map(labels.to_dict())
    table = MB.setups(runs)
    parts, baselines = [], {}
    for _, f in feats.groupby("job", sort=False):
        lab = f.drop_duplicates("run_id").set_index("run_id")["label"]
        labelled = lab.notna().any()
        ok = lab.index.isin(list(baseline_ok))
        clean = lab.index[ok & lab.eq("none")].tolist() if labelled else lab.index[ok].tolist()
        # the runs asked about, compared with their baselines; the others' comparisons unmade
        targets = f["run_id"].unique() if run_ids is None else [r for r in f["run_id"].unique() if r in asked_ids]
        alone: dict[str, MB.Baseline] = {}
        if labelled:
            mine = {r: MB.Baseline(frozenset(clean) - {r}, MB.LABELLED) for r in targets}
            # No other run labelled none: compared as in a job without labels, among the runs
            # not labelled as interfered with
            spare = lab.index[ok & (lab.isna() | lab.eq("none"))].tolist()
            for r in (r for r, b in mine.items() if not b.run_ids):
                b = MB.choose(table, r, spare)
                if b.run_ids:
                    alone[r] = replace(b, labelled_runs=int(lab.notna().sum()))
            mine.update(alone)
        else:
            mine = {r: MB.choose(table, r, clean) for r in targets}
        if run_ids is not None:
            wanted = set(clean).union(*(b.run_ids for b in alone.values()))
            f = f[f["run_id"].isin(run_ids) | f["run_id"].isin(wanted)]
        if labelled:
            done = with_baseline(f, clean)
            if run_ids is not None:
                done = done[done["run_id"].isin(asked_ids)]
            parts.append(done[~done["run_id"].isin(list(alone))])
            if alone:
                parts.append(MB.stages_against(f, alone))
        else:
            parts.append(MB.stages_against(f, mine))
        baselines.update(mine)
    if not parts:
        return feats.assign(expected_ms=np.nan, degradation=np.nan), baselines
    return MB.concat(parts), baselines


def fit_monitor(store: Store | str | Path | None = None, *, jobs: list[str] | None = None,
                **params: Any) -> DegradationModel:
    """Train a :class:`DegradationModel` on a store's labelled runs (default: the committed dataset).

    Raises :class:`DegenerateDataError` when no labelled run has a clean run of its job to
    compare with, or fewer than :data:`MIN_INTERFERED_RUNS` interfered and :data:`MIN_CLEAN_RUNS`
    clean runs belong to jobs that have both: the minimum :func:`default_model` trains a user's
    store from.
    """
    import pandas as pd

    from .store import io

    st = store if hasattr(store, "read") else io.open(store or DEFAULT_TRAINING_STORE)
    df, baselines = _stages_and_baselines(st, jobs)  # type: ignore[arg-type]
    # only against runs labelled none: a labelled job's runs compared with its unlabelled ones
    # for want of those (labelled_stages) would teach what an unlabelled run holds
    against_clean = df["run_id"].map(lambda r: r in baselines and baselines[r].kind == MB.LABELLED)
    train = df[df["label"].notna() & against_clean.astype(bool)]
    where = getattr(st, "path", st)
    # a labelled stage teaches something only beside a clean run of its job (its baseline)
    if "degradation" not in train or not pd.to_numeric(train["degradation"], errors="coerce").notna().any():
        raise DegenerateDataError(
            f"no labelled run in {where!r} has a clean run of its job to compare with",
            "record undisturbed runs of the same jobs labelled --conf spark.sparkpredict.interference=none, "
            "or leave the training store out to use the bundled dataset")
    runs = st.runs()  # type: ignore[union-attr]
    interfered, clean = _trainable_runs(runs if jobs is None else runs[runs["job"].isin(jobs)])
    if interfered < MIN_INTERFERED_RUNS or clean < MIN_CLEAN_RUNS:
        raise DegenerateDataError(
            f"too few labelled runs in {where!r} to train the slowdown monitor on: "
            f"{plural(interfered, 'interfered run')} and {plural(clean, 'clean run')} of jobs that have "
            f"both, where it needs at least {MIN_INTERFERED_RUNS} and {MIN_CLEAN_RUNS}",
            f"record {_more(interfered, MIN_INTERFERED_RUNS, 'interfered run')}"
            f"{_more(clean, MIN_CLEAN_RUNS, 'clean run', ' and ')} of those jobs (labelled --conf "
            "spark.sparkpredict.interference=KIND:N, or none for undisturbed ones; from a checkout, "
            "benchmarks/make_interference_dataset.py records both), or leave the training store out "
            "to use the bundled dataset")
    return DegradationModel(**params).fit(train)


def _more(have: int, need: int, what: str, sep: str = "") -> str:
    """"3 more interfered runs", or "" when there are enough."""
    return "" if have >= need else f"{sep}{plural(need - have, 'more ' + what)}"


_CACHE: dict[str, DegradationModel] = {}


def cached_monitor(st: Store | str | Path) -> DegradationModel:
    """:func:`fit_monitor` on ``st``, trained once per version of the store and of the monitor's
    code: kept in this process and on disk for the next one (:mod:`sparkpredict.fitcache`)."""
    import pickle

    import sklearn

    from . import fitcache
    from .store import io

    # duck-typed: anything with version() is used as the store, only paths are opened
    store = cast("Store", st) if hasattr(st, "version") else io.open(st)
    here = Path(__file__).resolve()
    stamp = fitcache.code_stamp(here, here.parent / "features" / "interference.py",
                                here.parent / "models" / "degradation.py")
    key = fitcache.make_key(store.path, store.version(), stamp, sklearn.__version__,
                            np.__version__)
    if key not in _CACHE:
        model = fitcache.read("monitor", key, "pkl", pickle.load, own_only=True)
        if not isinstance(model, DegradationModel):
            model = fit_monitor(store)
            fitcache.write("monitor", key, "pkl",
                           lambda f: pickle.dump(model, f, protocol=pickle.HIGHEST_PROTOCOL))
        _CACHE[key] = model
    return _CACHE[key]


def default_model(store: Store | str | Path | None = None) -> DegradationModel:
    """Trained on the user's store when it holds :data:`MIN_INTERFERED_RUNS` interfered and
    :data:`MIN_CLEAN_RUNS` clean labelled runs of jobs that have both, else on the committed
    dataset (:data:`DEFAULT_TRAINING_STORE`); trained once per store version (see :func:`cached_monitor`)."""
    from .store import io

    if store is not None:
        st = cast("Store", store) if hasattr(store, "runs") else io.open(store)
        interfered, clean = _trainable_runs(st.runs())
        if interfered >= MIN_INTERFERED_RUNS and clean >= MIN_CLEAN_RUNS:
            log.info("slowdown monitor trained on the labelled runs of %s", st.path)
            return cached_monitor(st)
    if not DEFAULT_TRAINING_STORE.exists():
        raise DegenerateDataError(
            "no labelled interference runs to train the slowdown monitor on",
            "record runs labelled --conf spark.sparkpredict.interference=KIND:N (none for undisturbed "
            "ones; from a checkout, benchmarks/make_interference_dataset.py --store S records both), "
            "or pass models=")
    log.info("slowdown monitor trained on the bundled dataset %s", DEFAULT_TRAINING_STORE)
    return cached_monitor(io.open(DEFAULT_TRAINING_STORE))
