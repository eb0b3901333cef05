"""Rows the stage-level models share with the replay: a fit's tables read from a store (or given),
rows in a stable order, and query rows checked and read as numbers."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..errors import InputError
from .timeline import as_pandas

if TYPE_CHECKING:
    import pandas as pd


def load_tables(store, tables, run_ids: list[str]):
    """(runs, stages, tasks) for ``run_ids`` from explicit tables or a store; the stages carry
    ``scan_files`` from the ``stage_scans`` table (NaN where it has no row: no known SQL file
    scan, or a store or tables from before it)."""
    if tables is not None:
        runs, stages, tasks, scans = (as_pandas(tables[k]) if tables.get(k) is not None else None
                                      for k in ("runs", "stages", "tasks", "stage_scans"))
        # tables built by hand: a raw KeyError from deep in the fit named no fix
        for name, df, need in (("runs", runs, ("run_id", "job")), ("stages", stages, ("run_id",)),
                               ("tasks", tasks, ("run_id",))):
            missing = [c for c in need if df is not None and c not in df.columns]
            if missing:
                raise InputError(f"the {name} table given has no {' or '.join(missing)} column",
                                 f"give each table with the store's columns (sparkpredict.store.io.open(PATH)"
                                 f".read({name!r}) has them); runs need run_id and job")
    else:
        from ..store import io as store_io

        st = store if hasattr(store, "read") else store_io.open(store)
        runs, stages, tasks, scans = (st.read(t, run_ids=run_ids)
                                      for t in ("runs", "stages", "tasks", "stage_scans"))
    keep = lambda df: None if df is None else df[df["run_id"].isin(run_ids)]
    return keep(runs), with_scan_files(keep(stages), scans), keep(tasks)


def with_scan_files(stages: pd.DataFrame | None, scans: pd.DataFrame | None) -> pd.DataFrame | None:
    """``stages`` with the ``scan_files`` of its stage attempts' ``stage_scans`` rows (the
    latest row of an attempt a run wrote twice), NaN where there is none."""
    import pandas as pd

    if stages is None:
        return None
    stages = stages.drop(columns=["scan_files"], errors="ignore")
    key = ["run_id", "stage_id", "stage_attempt_id"]
    if scans is None or scans.empty or not set(key) <= set(scans.columns) or "scan_files" not in scans:
        return stages.assign(scan_files=float("nan"))
    files = scans[[*key, "scan_files"]].drop_duplicates(key, keep="last")
    files = files.assign(scan_files=pd.to_numeric(files["scan_files"], errors="coerce").astype(float))
    out = stages.merge(files, on=key, how="left")
    out.index = stages.index
    return out


def sorted_rows(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    keys = [k for k in keys if k in df.columns]
    return df.sort_values(keys, kind="stable", na_position="first").reset_index(drop=True)


def optional_float(v):
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def query_frame(X) -> pd.DataFrame:
    import pandas as pd

    X = X if isinstance(X, pd.DataFrame) else pd.DataFrame(X)
    if "executors" not in X:
        raise InputError("query rows need an executors column", "add executors (and input_bytes, job)")
    return X
