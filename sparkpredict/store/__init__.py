"""The history store: Parquet tables ``runs``, ``stages``, ``tasks``, ``executors``.

>>> from sparkpredict import store
>>> s = store.open("/tmp/history")          # doctest: +SKIP
>>> s.runs()                                  # pandas DataFrame, one row per run
"""
from __future__ import annotations

from . import schema
from .io import Store, new_batch_id, open

__all__ = ["Store", "new_batch_id", "open", "schema"]
