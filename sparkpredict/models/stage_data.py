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
    """(runs, stages, tasks) for ``run_ids`` from explicit tables or a store."""
    if tables is not None:
        runs, stages, tasks = (as_pandas(tables[k]) if tables.get(k) is not None else None
                               for k in ("runs", "stages", "tasks"))
    else:
        from ..store import io as store_io

        st = store if hasattr(store, "read") else store_io.open(store)
        runs, stages, tasks = (st.read(t, run_ids=run_ids) for t in ("runs", "stages", "tasks"))
    keep = lambda df: None if df is None else df[df["run_id"].isin(run_ids)]
    return keep(runs), keep(stages), keep(tasks)


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
