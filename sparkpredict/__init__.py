"""sparkpredict: how many executors should this Spark job get, and how long will it take?

The public API is re-exported here and imported lazily, so ``import sparkpredict`` stays
fast enough for driver code and the CLI (numpy, pandas, scikit-learn load only when used).
"""
from __future__ import annotations

import importlib
import importlib.util
from typing import Any

__version__ = "0.5.0"

# public name -> module that defines it. (evaluate() and retrain() stay in their modules:
# a function named like its own submodule would be shadowed once the submodule is imported.)
_EXPORTS = {
    "attach": "sparkpredict.capture.listener",
    "build_listener": "sparkpredict.capture.listener",
    "listener_error": "sparkpredict.capture.listener",
    "listener_conf": "sparkpredict.capture.listener",
    "ingest_event_logs": "sparkpredict.capture.eventlog_ingest",
    "parse_event_log": "sparkpredict.capture.eventlog",
    "submit": "sparkpredict.capture.submit",
    "JobRuntimeModel": "sparkpredict.models.hybrid",
    "StageRuntimeModel": "sparkpredict.models.stages",
    "ReplayRuntimeModel": "sparkpredict.models.replay",
    "simulate_run": "sparkpredict.models.simulate",
    "load_models": "sparkpredict.registry",
    "suggest_executors": "sparkpredict.advise",
    "Advice": "sparkpredict.advice",
    "runs_table": "sparkpredict.features.runs",
    "explain_run": "sparkpredict.monitor",
}
_SUBMODULES = ("store", "errors", "units", "config")
__all__ = ["__version__", *_SUBMODULES, *sorted(_EXPORTS)]  # noqa: PLE0604 (names: strings)


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"sparkpredict.{name}")
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    # any other submodule, as the docs write them (sparkpredict.sweep.plan_sweep) after a bare
    # `import sparkpredict`: imported on first use, as the names above
    # a name that is no identifier ("x.y") is no submodule: find_spec would import the parent
    # and raise ModuleNotFoundError, breaking hasattr()
    if name.isidentifier() and not name.startswith("_") \
            and importlib.util.find_spec(f"sparkpredict.{name}") is not None:
        return importlib.import_module(f"sparkpredict.{name}")
    raise AttributeError(f"module 'sparkpredict' has no attribute {name!r}")


def __dir__() -> list[str]:
    # the public API (loaded lazily), so that dir() and a notebook's tab completion show it
    # and not this module's own helpers
    return sorted(set(__all__) | {n for n in globals() if n.startswith("__")})
