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

if TYPE_CHECKING:
    import pandas as pd

    from .store.io import Store

__all__ = ["DEFAULT_TRAINING_STORE", "cached_monitor", "default_model", "fit_monitor", "labelled_stages"]
# the name it logged under before the split, so that a logging setup aimed at it still applies
log = logging.getLogger("sparkpredict.monitor")

#: Default training data: the labelled dataset shipped with the package (see its NOTES.md).
DEFAULT_TRAINING_STORE = Path(__file__).resolve().parent / "data" / "interference" / "store"


# ---- from a store ------------------------------------------------------------------------
def labelled_stages(store: Store, jobs: list[str] | None = None,
                    run_ids: list[str] | None = None) -> pd.DataFrame:
    """Stage features of every run in ``store`` (or of ``jobs``), with baselines and labels.

    Columns of :func:`with_baseline` plus ``job`` and ``label`` (the run's interference label).
    Each job's clean runs are those labelled ``none``. A run of a job without labels is compared
    with the job's runs of its setup, or with all of them where too few ran that setup
    (:func:`sparkpredict.monitor_baseline.choose`). Only succeeded and incomplete runs serve as
    clean runs or training data; a failed or killed run is included when ``run_ids`` names it,
    so that its completed stages can be explained. With ``run_ids``, the rows are those runs'
    only (their baselines' runs are read, not compared in turn).
    """
    return _stages_and_baselines(store, jobs, run_ids)[0]


def _stages_and_baselines(store: Store, jobs: list[str] | None = None, run_ids: list[str] | None = None
                          ) -> tuple[pd.DataFrame, dict[str, MB.Baseline]]:
    """:func:`labelled_stages`, and the baseline each of its runs was compared with."""
    import pandas as pd

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
    labels = interference_labels(runs)
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
        clean = lab[lab == "none"].index.tolist() if labelled else lab.index.tolist()
        clean = [r for r in clean if r in baseline_ok]
        # the runs asked about, compared with their baselines; the others' comparisons unmade
        targets = f["run_id"].unique() if run_ids is None else [r for r in f["run_id"].unique() if r in asked_ids]
        if run_ids is not None:
            f = f[f["run_id"].isin(run_ids) | f["run_id"].isin(clean)]
        if labelled:
            mine = {r: MB.Baseline(frozenset(clean) - {r}, MB.LABELLED) for r in targets}
            done = with_baseline(f, clean)
            parts.append(done if run_ids is None else done[done["run_id"].isin(asked_ids)])
        else:
            mine = {r: MB.choose(table, r, clean) for r in targets}
            parts.append(MB.stages_against(f, mine))
        baselines.update(mine)
    if not parts:
        return feats.assign(expected_ms=np.nan, degradation=np.nan), baselines
    return pd.concat(parts, ignore_index=True), baselines


def fit_monitor(store: Store | str | Path | None = None, *, jobs: list[str] | None = None,
                **params: Any) -> DegradationModel:
    """Train a :class:`DegradationModel` on a store's labelled runs (default: the committed dataset)."""
    import pandas as pd

    from .store import io

    st = store if hasattr(store, "read") else io.open(store or DEFAULT_TRAINING_STORE)
    df = labelled_stages(st, jobs)  # type: ignore[arg-type]
    train = df[df["label"].notna()]
    # a labelled stage teaches something only beside a clean run of its job (its baseline)
    if "degradation" not in train or not pd.to_numeric(train["degradation"], errors="coerce").notna().any():
        raise DegenerateDataError(
            f"no labelled run in {getattr(st, 'path', st)!r} has a clean run of its job to compare with",
            "record undisturbed runs of the same jobs labelled --conf spark.sparkpredict.interference=none, "
            "or leave the training store out to use the bundled dataset")
    return DegradationModel(**params).fit(train)


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
        model = fitcache.read("monitor", key, "pkl", pickle.load)
        if not isinstance(model, DegradationModel):
            model = fit_monitor(store)
            fitcache.write("monitor", key, "pkl",
                           lambda f: pickle.dump(model, f, protocol=pickle.HIGHEST_PROTOCOL))
        _CACHE[key] = model
    return _CACHE[key]


def default_model(store: Store | str | Path | None = None) -> DegradationModel:
    """Trained on the user's store when it holds labelled interfered runs, else on the committed
    dataset (:data:`DEFAULT_TRAINING_STORE`); trained once per store version (see :func:`cached_monitor`)."""
    import pandas as pd

    from .store import io

    if store is not None:
        st = cast("Store", store) if hasattr(store, "runs") else io.open(store)
        runs = st.runs()
        labels = pd.Series(interference_labels(runs).to_numpy(), index=runs["job"].to_numpy()).dropna()
        # interfered runs teach only beside clean runs of their own job
        has_clean = set(labels[labels == "none"].index)
        labels = labels[labels.index.isin(has_clean)]
        if (labels != "none").sum() >= 5 and (labels == "none").sum() >= 2:
            log.info("slowdown monitor trained on the labelled runs of %s", st.path)
            return cached_monitor(st)
    if not DEFAULT_TRAINING_STORE.exists():
        raise DegenerateDataError(
            "no labelled interference runs to train the slowdown monitor on",
            "record some with benchmarks/make_interference_dataset.py --store S, or pass models=")
    log.info("slowdown monitor trained on the bundled dataset %s", DEFAULT_TRAINING_STORE)
    return cached_monitor(io.open(DEFAULT_TRAINING_STORE))
