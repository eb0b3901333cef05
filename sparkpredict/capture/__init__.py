"""Capture: the JVM listener (build, attach), the spark-submit wrapper, and event-log ingest.

Only this package (and jobs/workloads) imports pyspark, and only inside functions.
"""
from __future__ import annotations

from .listener import attach, build_listener, listener_conf, listener_error

__all__ = ["attach", "build_listener", "listener_conf", "listener_error"]
