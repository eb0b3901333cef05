"""The history store: Parquet tables ``runs``, ``stages``, ``tasks``, ``executors``.

>>> from sparkpredict import store
>>> s = store.open("/tmp/history")          # doctest: +SKIP
>>> s.runs()                                  # pandas DataFrame, one row per run
>>> store.edit_runs(s, ["app-1"], excluded=True)  # doctest: +SKIP
>>> store.edit_runs_by_time(s, "nightly-etl", before="2026-12-01")  # doctest: +SKIP
"""
from __future__ import annotations

from . import schema
from .edit import edit_runs, edit_runs_by_time
from .io import Store, new_batch_id, open

__all__ = ["Store", "edit_runs", "edit_runs_by_time", "new_batch_id", "open", "schema"]
