"""The history store: Parquet tables ``runs``, ``stages``, ``tasks``, ``executors``.

>>> from sparkpredict import store
>>> s = store.open("/tmp/history")          # doctest: +SKIP
>>> s.runs()                                  # pandas DataFrame, one row per run
>>> store.edit_runs(s, ["app-1"], excluded=True)  # doctest: +SKIP
"""
from __future__ import annotations

from . import schema
from .edit import edit_runs
from .io import Store, new_batch_id, open

__all__ = ["Store", "edit_runs", "new_batch_id", "open", "schema"]
