"""Slowdown monitor: how much was a run slowed by interference, and which resource caused it.

An Alioth-style monitor built from the store's recorded task metrics alone (no knowledge of the
application):

* **Target.** Per stage and per run, the degradation ``D = actual / expected - 1``. ``expected``
  is the median duration of the same stage (same signature) in clean runs of the same job:
  runs labelled ``spark.sparkpredict.interference=none``, or, without labels (a blank label is
  none) or without another run labelled ``none``, the job's other runs of the same setup not
  labelled as interfered with (executors, cores, input size; :mod:`sparkpredict.monitor_baseline`).
  A run's actual and expected times are sums over its stages, so ``D_run`` is the
  expected-time-weighted mean of the stages' ``D``.
* **Features** per stage (in :mod:`sparkpredict.features.interference`; :data:`FEATURE_GROUPS`
  maps each to a resource group): CPU time /
  (run time - shuffle fetch wait - shuffle write time), so that I/O waits do not read as CPU
  contention; GC time / run time; shuffle fetch wait / run time; shuffle write time / run time;
  spilled bytes per input byte; scheduler delay (duration - run - deserialize - result
  serialization - getting result) and deserialize time, per task in ms; task-duration skew
  (max / median); CPU ms per MiB moved; and Alioth's windowed first-order statistics (mean, min,
  max, max-min, std) of the per-task metrics over windows of 3, 5, 10 and 20 s of task finish
  times. The model sees each feature's log-ratio to the clean baseline of the same stage.
* **Estimator.** ``log(1 + D)`` per stage = a physical prior (the run's summed change of the
  run-time components :data:`COMPONENTS` over its baseline run time) + a gradient-boosting
  correction, weighted by expected time, whose weight is chosen by leave-one-job-out
  cross-validation (on the shipped dataset it is 0: the boosting does not carry over). When a
  stage has no clean history, a denoising autoencoder (Alioth's DAE, an MLP trained on paired
  interfered -> clean features) can reconstruct the baseline; ``benchmarks/monitor_quality.py``
  measures whether it helps.
* **Attribution.** Exact Shapley values over the four groups (``cpu``, ``memory``, ``network``,
  ``disk``): a coalition's value is the run's estimated ``D`` with the other groups' features set
  to their clean baseline. 16 coalitions, so exact is cheap.

This module is the public entry point, and its names stay importable from here. The work is in
:mod:`sparkpredict.monitor_training` (labels a store's stages, :func:`labelled_stages`, and
trains the estimator on them, :func:`fit_monitor`, :func:`cached_monitor`,
:func:`default_model`), :mod:`sparkpredict.monitor_explain` (explains a run,
:func:`explain_run`, and a job's slowest runs, :func:`slowest_runs`) and
:mod:`sparkpredict.monitor_baseline` (which runs a run is compared with). The features and a
run's host evidence live in :mod:`sparkpredict.features.interference`, the estimator and its
attribution in :mod:`sparkpredict.models.degradation`.
"""
from __future__ import annotations

from .features.interference import (  # the features live there; their names stay importable here
    COMPONENTS,
    FEATURE_GROUPS,
    FEATURES,
    FOOTPRINT,
    GROUPS,
    HOST_FEATURES,
    KEY,
    LABEL_KEY,
    STAGE_FEATURES,
    STATS,
    TASK_RATIOS,
    WINDOW_FEATURES,
    WINDOWS_S,
    clean_baseline,
    host_evidence,
    host_footprint,
    interference_labels,
    stage_features,
    stage_signatures,
    with_baseline,
)
from .models.degradation import (  # the estimator lives there; its names stay importable here
    CORRECTION_WEIGHTS,
    CULPRIT_EVIDENCE,
    DegradationModel,
    run_degradation,
    run_estimate,
    shapley,
)
from .monitor_explain import (
    CAUSE_MIN_SLOWDOWN,
    MATCHED_SHARE_WARN,
    QOS_THRESHOLDS,
    SHORTER_THAN_TRAINED,
    UNRANKED,
    Explanation,
    SlowRun,
    StageImpact,
    explain_run,
    slowest_runs,
    unranked_runs,
)
from .monitor_training import (
    _CACHE,  # noqa: F401  (the same dict: clearing it here clears the monitor's cache)
    DEFAULT_TRAINING_STORE,
    cached_monitor,
    default_model,
    fit_monitor,
    labelled_stages,
)

__all__ = [
    "CAUSE_MIN_SLOWDOWN",
    "COMPONENTS",
    "CORRECTION_WEIGHTS",
    "CULPRIT_EVIDENCE",
    "DEFAULT_TRAINING_STORE",
    "FEATURES",
    "FEATURE_GROUPS",
    "FOOTPRINT",
    "GROUPS",
    "HOST_FEATURES",
    "KEY",
    "LABEL_KEY",
    "MATCHED_SHARE_WARN",
    "QOS_THRESHOLDS",
    "SHORTER_THAN_TRAINED",
    "STAGE_FEATURES",
    "STATS",
    "TASK_RATIOS",
    "UNRANKED",
    "WINDOWS_S",
    "WINDOW_FEATURES",
    "DegradationModel",
    "Explanation",
    "SlowRun",
    "StageImpact",
    "cached_monitor",
    "clean_baseline",
    "default_model",
    "explain_run",
    "fit_monitor",
    "host_evidence",
    "host_footprint",
    "interference_labels",
    "labelled_stages",
    "run_degradation",
    "run_estimate",
    "shapley",
    "slowest_runs",
    "stage_features",
    "stage_signatures",
    "unranked_runs",
    "with_baseline",
]
