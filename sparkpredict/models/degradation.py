"""The slowdown monitor's estimator: :class:`DegradationModel` (the degradation ``D`` of each stage
from its features against their clean baseline, and who took the cores from the host
footprints), a run's estimate (:func:`run_estimate`) and its exact Shapley attribution over the
resource groups (:func:`shapley`). :mod:`sparkpredict.monitor` trains it on a store and explains
runs with it."""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DegenerateDataError, InputError, NotFittedError
from ..features.interference import (
    COMPONENTS,
    FEATURE_GROUPS,
    FEATURES,
    GROUPS,
    HOST_FEATURES,
    host_evidence,
    stage_weights,
)

if TYPE_CHECKING:
    import pandas as pd

#: Weights of the boosted correction that :class:`DegradationModel` chooses from by cross-validation.
CORRECTION_WEIGHTS = (0.0, 0.25, 0.5, 1.0)
_EPS = 1e-2
_COMPONENT_IDX = np.array([f in COMPONENTS for f in FEATURES])
#: The host evidence the culprit model reads: each kind of neighbour's own footprint (network:
#: bytes and the softirq time that moves them; disk: bytes, I/O stalls and iowait; memory: the
#: memory it holds). A neighbour that takes cores and leaves none of these is a compute one.
#: CPU-wide counters (PSI cpu, system share, context switches) rise under every neighbour and
#: came out differently in local mode than in the training runs; on all 14 features the model
#: named network for a memory bubble there, on these it names memory (docs/monitor.md).
CULPRIT_EVIDENCE = ("host_net_mib_s", "host_softirq_share", "host_disk_mib_s", "host_psi_io",
                    "host_iowait_share", "host_mem_available_gib")
_CULPRIT_IDX = [HOST_FEATURES.index(f) for f in CULPRIT_EVIDENCE]


def _design(x: np.ndarray, x0: np.ndarray | None, scale: np.ndarray | None = None) -> np.ndarray:
    """Log-ratios to the clean baseline: scale-free, so they carry over between applications
    (a CPU-bound stage whose CPU share halves runs about twice as long, whatever it computes).
    The run-time components (:data:`COMPONENTS`) enter as their change over the baseline's run
    time per task (``scale``), so that they add up to the stretch of the tasks. Without a
    baseline, the raw features."""
    if x0 is None:
        return x
    z = np.log((np.abs(x) + _EPS) / (np.abs(x0) + _EPS))
    if scale is not None:
        s = np.maximum(np.asarray(scale, dtype=float), 1.0)[:, None]
        z[:, _COMPONENT_IDX] = (x[:, _COMPONENT_IDX] - x0[:, _COMPONENT_IDX]) / s
    return z


def _scale(df: pd.DataFrame) -> np.ndarray:
    """The baseline's run ms per task of each row (the row's own when it has no baseline)."""
    own = df["run_ms"].to_numpy(float) if "run_ms" in df else np.ones(len(df))
    if "base_run_ms" not in df:
        return own
    base = df["base_run_ms"].to_numpy(float)
    return np.where(np.isfinite(base), base, own)


@dataclass
class DegradationModel:
    """Gradient boosting of per-stage ``log(1 + D)`` from the features' log-ratios to their clean
    baseline (or from the raw features, with ``baseline="none"``).

    ``baseline``: ``"history"`` (clean runs of the same stage; the DAE fills stages that have
    none when ``autoencoder=True``), ``"dae"`` (always the autoencoder's reconstruction of the
    clean features) or ``"none"`` (no baseline). The DAE is off by default:
    ``benchmarks/monitor_quality.py`` found no material gain from it on the committed dataset.

    ``prior``: ``"components"`` (default) starts from the physical estimate, the sum of the
    run-time components' changes over the baseline's run time (:data:`COMPONENTS`: a task that
    waited 300 ms more for a core on a 1 s baseline is 30 % slower), and the boosting learns only
    the rest (scheduling, driver time, waves that no longer line up); ``"none"`` boosts from zero.

    ``culprit``: ``"host"`` (default) learns, from the footprints in the training runs' host
    counters (:data:`CULPRIT_EVIDENCE` against their clean baseline), which kind of neighbour took the cores
    that Spark's tasks waited for: a compute (``cpu``), memory, network or disk neighbour. The
    rise in ``wait_ms`` is then shared among those groups by that probability
    (:meth:`culprit_probabilities`) instead of going to ``cpu`` whole. The estimate of ``D`` does
    not change, only its attribution. A memory neighbour is recognised by its footprint, the
    memory it holds (less available memory than in the clean runs): /proc shows its bandwidth
    as plain user-mode CPU, and the cache and bandwidth counters that would show it are
    hardware counters that VMs rarely expose. So a compute neighbour holding gigabytes is named
    memory too (docs/monitor.md). ``"host3"`` counts memory neighbours as compute ones, leaving
    ``memory`` only what shows in Spark's own metrics (more CPU time for the same work, GC).
    ``"none"``, or runs without host samples, give the wait to ``cpu``. ``culprit_c`` is the
    inverse L2 strength of the logistic regression (set before the data was seen;
    ``benchmarks/monitor_quality.py`` reports the sensitivity).

    ``correction``: the weight of the boosted part on top of the prior. None (default) chooses it
    among :data:`CORRECTION_WEIGHTS` by leave-one-job-out cross-validation on the training runs
    (run-level MAE), because what the boosting learns about one application need not carry over
    to another; a number fixes it (1.0: the plain boosted model).
    """

    baseline: str = "history"
    autoencoder: bool = False
    prior: str = "components"
    correction: float | None = None
    culprit: str = "host"
    culprit_c: float = 0.5
    n_estimators: int = 200
    max_depth: int = 3
    learning_rate: float = 0.05
    random_state: int = 0
    gbr_: Any = field(default=None, repr=False)
    dae_: Any = field(default=None, repr=False)
    scale_: Any = field(default=None, repr=False)
    correction_: float = 1.0
    correction_cv_: dict = field(default_factory=dict, repr=False)
    culprit_: Any = field(default=None, repr=False)
    #: (shortest, longest) total stage time of a training run, in ms: the runs the estimate
    #: was learnt on (None for a model fitted before it was recorded)
    train_run_ms_: tuple[float, float] | None = None

    def baseline_features(self, df: pd.DataFrame) -> np.ndarray:
        """The clean baseline of each row, per ``self.baseline``."""
        x = df[FEATURES].to_numpy(float)
        if self.baseline == "none":
            return x
        hist = df[[f"base_{c}" for c in FEATURES]].to_numpy(float) if f"base_{FEATURES[0]}" in df \
            else np.full_like(x, np.nan)
        if self.dae_ is not None and (self.baseline == "dae" or np.isnan(hist).any()):
            mu, sd = self.scale_
            rec = self.dae_.predict((x - mu) / sd) * sd + mu
            return rec if self.baseline == "dae" else np.where(np.isnan(hist), rec, hist)
        return np.where(np.isnan(hist), x, hist)

    def fit(self, df: pd.DataFrame) -> DegradationModel:
        """Fit on stage rows from :func:`with_baseline` (rows without a label are skipped)."""
        from sklearn.ensemble import GradientBoostingRegressor

        if self.culprit not in ("host", "host3", "none"):
            raise InputError(f"culprit={self.culprit!r} is not a culprit model", "use 'host', 'host3' or 'none'")
        df = df[np.isfinite(df["degradation"]) & (df["expected_ms"] > 0)]
        if len(df) < 10:
            raise DegenerateDataError(f"only {len(df)} labelled stages to train the monitor on",
                                      "record clean and interfered runs, labelled --conf "
                                      "spark.sparkpredict.interference=KIND:N or none (from a checkout, "
                                      "benchmarks/make_interference_dataset.py records both)")
        x = df[FEATURES].to_numpy(float)
        if self.baseline == "dae" or (self.autoencoder and self.baseline == "history"):
            self._fit_dae(x, df[[f"base_{c}" for c in FEATURES]].to_numpy(float))
        x0 = None if self.baseline == "none" else self.baseline_features(df)
        z = _design(x, x0, _scale(df))
        y = np.log1p(df["degradation"].clip(lower=-0.9).to_numpy(float)) - self._prior(x, x0, df)
        self.gbr_ = GradientBoostingRegressor(
            n_estimators=self.n_estimators, max_depth=self.max_depth, learning_rate=self.learning_rate,
            subsample=0.8, loss="huber", random_state=self.random_state)
        self.gbr_.fit(z, y, sample_weight=np.sqrt(df["expected_ms"].to_numpy(float)))
        self.correction_ = 1.0 if self.prior == "none" or x0 is None else (
            self.correction if self.correction is not None else self._choose_correction(df))
        self.culprit_ = self._fit_culprit(df) if self.culprit != "none" else None
        if "duration_ms" in df and "run_id" in df:
            per_run = df.groupby("run_id")["duration_ms"].sum()
            self.train_run_ms_ = (float(per_run.min()), float(per_run.max()))
        return self

    def _fit_culprit(self, df: pd.DataFrame) -> Any:
        """Multinomial logistic regression of the interfered runs' neighbour kind on the
        :data:`CULPRIT_EVIDENCE` part of their host evidence; None without host samples for at
        least two kinds (8 runs)."""
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        if "label" not in df:
            return None
        xs, ys = [], []
        for _, rows in df[df["label"].notna() & (df["label"] != "none")].groupby("run_id", sort=False):
            z = _culprit_evidence(rows)
            kind = str(rows["label"].iloc[0]).split(":")[0]
            if kind == "memory" and self.culprit == "host3":
                kind = "cpu"
            if z is not None and kind in GROUPS:
                xs.append(z)
                ys.append(kind)
        if len(ys) < 8 or len(set(ys)) < 2:
            return None
        return make_pipeline(StandardScaler(), LogisticRegression(C=self.culprit_c, max_iter=2000)).fit(
            np.array(xs), ys)

    def host_culprit(self, rows: pd.DataFrame) -> dict[str, float] | None:
        """Which group's neighbour took the cores, for one run: probabilities over :data:`GROUPS`
        from its host evidence; None without a culprit model or host samples."""
        z = _culprit_evidence(rows) if self.culprit_ is not None else None
        if z is None:
            return None
        p = self.culprit_.predict_proba(z[None, :])[0]
        probs = dict(zip(self.culprit_.classes_, p))
        return {g: float(probs.get(g, 0.0)) for g in GROUPS}

    def culprit_probabilities(self, rows: pd.DataFrame) -> dict[str, float]:
        """:meth:`host_culprit`, or all on ``cpu`` where it has nothing to say."""
        return self.host_culprit(rows) or {g: float(g == "cpu") for g in GROUPS}

    def _choose_correction(self, df: pd.DataFrame) -> float:
        """The weight in :data:`CORRECTION_WEIGHTS` with the lowest run-level MAE when each
        training job in turn is predicted by a model fitted on the others (1.0 with one job)."""
        from dataclasses import replace

        jobs: np.ndarray | list[Any] = df["job"].dropna().unique() if "job" in df else []
        if len(jobs) < 2:
            return 1.0
        err: dict[float, list[float]] = {w: [] for w in CORRECTION_WEIGHTS}
        for held in jobs:
            sub = replace(self, correction=1.0, gbr_=None, dae_=None, scale_=None).fit(df[df["job"] != held])
            for _, rows in df[df["job"] == held].groupby("run_id", sort=False):
                rows = rows.reset_index(drop=True)
                measured = run_degradation(rows)[2]
                if not math.isfinite(measured):
                    continue
                for w in CORRECTION_WEIGHTS:
                    sub.correction_ = w
                    err[w].append(abs(run_estimate(sub, rows) - measured))
        self.correction_cv_ = {w: float(np.mean(e)) for w, e in err.items() if e}
        if not self.correction_cv_:
            return 1.0
        return min(self.correction_cv_, key=self.correction_cv_.__getitem__)

    def _fit_dae(self, x: np.ndarray, x0: np.ndarray) -> None:
        """Denoising autoencoder: noisy interfered features -> the clean baseline's features."""
        from sklearn.neural_network import MLPRegressor

        ok = ~np.isnan(x0).any(axis=1)
        mu, sd = x[ok].mean(axis=0), x[ok].std(axis=0) + 1e-6
        rng = np.random.default_rng(self.random_state)
        xs, x0s = (x[ok] - mu) / sd, (x0[ok] - mu) / sd
        noisy = np.vstack([xs + rng.normal(0, 0.1, xs.shape) for _ in range(3)])
        self.dae_ = MLPRegressor(hidden_layer_sizes=(48, 12, 48), alpha=1e-3, max_iter=300,
                                 random_state=self.random_state).fit(noisy, np.vstack([x0s] * 3))
        self.scale_ = (mu, sd)

    def predict(self, df: pd.DataFrame, x0: np.ndarray | None = None) -> np.ndarray:
        """Estimated ``D`` per stage row; ``x0`` overrides the baseline features."""
        if self.gbr_ is None:
            raise NotFittedError("the degradation model is not fitted", "call fit() first")
        x0 = self.baseline_features(df) if x0 is None else x0
        x = df[FEATURES].to_numpy(float)
        x0 = None if self.baseline == "none" else x0
        return np.expm1(self._prior(x, x0, df)
                        + self.correction_ * self.gbr_.predict(_design(x, x0, _scale(df))))

    def _prior(self, x: np.ndarray, x0: np.ndarray | None, df: pd.DataFrame) -> np.ndarray:
        """``log(1 + D)`` of the components' summed change over the whole run, for each of its
        stages (0 without a baseline or prior).

        Summed over the run's tasks, not per stage: stages submitted together share the slots,
        and which of them gets a cold executor's first task (seconds of class loading and JIT)
        changes from run to run; over the run those shifts cancel.

        Clipped to ``D`` between -0.5 and 20: where ``correction_`` is 0 (the bundled dataset's
        choice), every estimate lies in that range, and the docs say so (docs/monitor.md)."""
        if self.prior == "none" or x0 is None:
            return np.zeros(len(x))
        import pandas as pd

        n = df["num_tasks"].to_numpy(float) if "num_tasks" in df else np.ones(len(df))
        extra = np.nan_to_num((x[:, _COMPONENT_IDX] - x0[:, _COMPONENT_IDX]).sum(axis=1)) * n
        base = np.maximum(_scale(df), 1.0) * n
        runs = df["run_id"].to_numpy() if "run_id" in df else np.zeros(len(df))
        tot = pd.DataFrame({"run": runs, "extra": extra, "base": base}).groupby("run", sort=False)
        d = (tot["extra"].transform("sum") / tot["base"].transform("sum")).to_numpy(float)
        return np.log1p(np.clip(d, -0.5, 20.0))


def _culprit_evidence(rows: pd.DataFrame) -> np.ndarray | None:
    z = host_evidence(rows)
    return None if z is None else z[_CULPRIT_IDX]


def run_estimate(model: DegradationModel, rows: pd.DataFrame, x0: np.ndarray | None = None) -> float:
    """A run's estimated ``D``: its stages' estimates weighted by expected (else actual) time."""
    return float(np.average(model.predict(rows, x0), weights=stage_weights(rows)))


def shapley(model: DegradationModel, rows: pd.DataFrame,
            culprit: dict[str, float] | None = None) -> dict[str, float]:
    """Exact Shapley value of each group in :data:`GROUPS` for a run's estimated ``D``.

    A coalition's value is :func:`run_estimate` with the features of groups outside it set to
    their clean baseline; the values sum to ``estimate(all) - estimate(none)``. The wait for a
    core (``wait_ms``) belongs to every group in proportion to
    :meth:`DegradationModel.culprit_probabilities`: a coalition moves it from its baseline by
    its groups' share of the probability (``culprit``, computed when not given).
    """
    x = rows[FEATURES].to_numpy(float)
    x0 = model.baseline_features(rows)
    cols = {g: np.array([FEATURE_GROUPS[f] == g for f in FEATURES]) for g in GROUPS}
    wait = FEATURES.index("wait_ms")
    for g in GROUPS:
        cols[g][wait] = False
    culprit = culprit or model.culprit_probabilities(rows)
    value: dict[frozenset[str], float] = {}
    for r in range(len(GROUPS) + 1):
        for coal in itertools.combinations(GROUPS, r):
            mask = np.any([cols[g] for g in coal], axis=0) if coal else np.zeros(len(FEATURES), bool)
            xs = np.where(mask, x, x0)
            share = sum(culprit[g] for g in coal)
            xs[:, wait] = x0[:, wait] + share * (x[:, wait] - x0[:, wait])
            value[frozenset(coal)] = run_estimate(model, rows.assign(**dict(zip(FEATURES, xs.T))), x0)
    n = len(GROUPS)
    phi = {}
    for g in GROUPS:
        others = [h for h in GROUPS if h != g]
        total = 0.0
        for r in range(n):
            for coal in itertools.combinations(others, r):
                wgt = math.factorial(r) * math.factorial(n - r - 1) / math.factorial(n)
                total += wgt * (value[frozenset(coal) | {g}] - value[frozenset(coal)])
        phi[g] = total
    return phi


def run_degradation(rows: pd.DataFrame) -> tuple[float, float, float]:
    """``(actual_ms, expected_ms, D)`` of one run over its stages that have a baseline."""
    ok = rows["expected_ms"].notna() & (rows["expected_ms"] > 0)
    act, exp = float(rows.loc[ok, "duration_ms"].sum()), float(rows.loc[ok, "expected_ms"].sum())
    return act, exp, (act / exp - 1.0 if exp > 0 else float("nan"))
