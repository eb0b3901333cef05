"""Where the advice's model and history come from: a model folder, models in memory, the store's
registry, or a fit of the job's runs (cached per store version, in memory and as JSON under
``cache_dir()/advice``, so the next process does not refit), plus the warnings the runs
support (too few runs, heavy spill, dynamic allocation).

The registry lookup, the fit and its caches live in :mod:`sparkpredict.advice_cache`
(:func:`prepare_advice` and :func:`registry_model` are still importable from here).

Imported by :mod:`sparkpredict.advise`; nothing here starts a JVM, and pandas is imported only
when a store is read.
"""
from __future__ import annotations

import math
import os
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .advice import EXTRAPOLATION_NOTED
from .advice_args import arg_name, give
from .advice_cache import (
    _CACHE,
    _registry_snapshot,
    _remember,
    fitted_source,
    load_or_fit,
    prepare_advice,  # noqa: F401  (re-exported: it lived here before advice_cache)
    registry_model,
)
from .errors import InputError
from .units import plural

if TYPE_CHECKING:
    import pandas as pd

_MIN_RUNS = 10
#: Input per memory within this factor of the largest that ran counts as what ran: a size rounded
#: in print ("32MB" against a run of 31,999,986 bytes) is no step beyond it, nor one that the
#: advice does not call an extrapolation either (18.8 MB against a run of 18,766,538 bytes, 0.18 %
#: more, was warned of and told to set the 1024 MiB already set, "1.00 GiB").
_SAME_RATIO = 1 + EXTRAPOLATION_NOTED
#: A run "spilled heavily" when it spilled to disk at least this fraction of its input.
_HEAVY_SPILL_FRACTION = 0.1
#: Input per byte of memory below which no spill warning is given, however little the runs
#: held, unless runs at that ratio or below spilled heavily: the whole input held at once, at
#: 10x its size deserialized, fills a fifth of the heap, within the 60 % Spark gives execution
#: and storage. Without it, 4 MB asked of a history of 2 MB runs warned that the 1 GiB driver
#: "holds 0.0037 bytes of input per byte, beyond the 0.0019 that ran".
_NO_SPILL_BELOW = 0.02

#: A declared size within this share of what its stages read agrees with it: the same input, not
#: two sizes of it. Wide enough for a size typed to two digits ("1.5GB" for 1.54 GB), for GB typed
#: where GiB was meant (7.4 %) and for the bytes a read takes beyond its split; narrower than the
#: runtime model's usual error, so that a difference within it moves no advice more than the
#: model's own error does.
SIZE_AGREES = 0.10
#: A declared run whose size over what its stages read is this many times above or below the
#: job's usual ratio (the low median over its runs, a measured run's being 1) is warned of as a
#: mistake (a digit: 10x, a unit: 1000x), mixed history or not. Relative to the job, not to what
#: the stages read: a job that reads its input several times measures that many times its files
#: (a sweep's sort: 3x, its sample and its sort; two actions over one file: 2x), which every
#: declared file size of it rightly differs from alike.
SIZE_OFF = 3.0
#: Runs to compare (declared with a measured size, or measured) before a ratio is the job's usual one
_SIZE_RUNS = 3

_MODELS_FIX = "pass the dict that sparkpredict.models.persist.load_models or fit_all returns, or a model folder"


@dataclass(frozen=True)
class SizeMix:
    """How the succeeded runs of a job got their input sizes: declared or measured, and of the
    declared ones, how the size compares with what their stages read (``run_inputs``)."""

    #: runs whose size was declared
    declared: int = 0
    #: runs whose size was measured
    measured: int = 0
    #: declared runs whose stages' measured size is not known (recorded before ``run_inputs``,
    #: or their stages read no bytes that Spark counts: generated data, a database)
    unknown: int = 0
    #: (run id, declared, measured) of the declared runs whose stages' measured size is known,
    #: oldest first
    compared: tuple[tuple[str, int, int], ...] = ()
    #: the job's usual declared (or measured) size over what the stages read: the low median of
    #: its comparable runs' ratios; None with fewer than :data:`_SIZE_RUNS` of them, or where
    #: fewer than half of them are within :data:`SIZE_AGREES` of it (sizes that do not follow
    #: what the stages read)
    usual: float | None = None

    @property
    def differ(self) -> tuple[tuple[str, int, int], ...]:
        """The compared runs whose declared size is more than :data:`SIZE_AGREES` away from what
        their stages read, oldest first."""
        return tuple(d for d in self.compared if abs(d[1] - d[2]) > SIZE_AGREES * d[2])

    def off(self) -> list[tuple[str, int, int]]:
        """The compared runs whose ratio is :data:`SIZE_OFF` times the job's usual one or more,
        either way: a run that declared what its stages read too, in a job whose runs declare a
        third of it (a review: docs/advice.md said so, and such a run went unnamed)."""
        u = self.usual
        if u is None or not u > 0:
            return []
        return [d for d in self.compared if max(d[1] / d[2], u) >= SIZE_OFF * min(d[1] / d[2], u)]


#: Per-executor resources the advice asks for: only a positive value is one.
_RESOURCES = ("executor_cores", "executor_memory_mb")


class HistorySource:
    """The job's fitted model, plus its runs when a store is at hand (for defaults and warnings)."""

    def __init__(self, job: str, model: Any, runs: pd.DataFrame | None = None,
                 spill: pd.Series | None = None, dyn_alloc: bool = False, local: bool = False,
                 sweep_mix: tuple[int, int] = (0, 0), source: str | None = None,
                 size_mix: SizeMix = SizeMix(), masters: frozenset[str] = frozenset()) -> None:
        self.job, self.model, self.runs, self.spill, self._dyn = job, model, runs, spill, dyn_alloc
        #: (succeeded runs a `sparkpredict sweep` recorded, the others) when both kinds are there
        self.sweep_mix = sweep_mix
        #: how the succeeded runs' input sizes were recorded, and whether the declared ones agree
        #: with what their stages read
        self.size_mix = size_mix
        #: the kinds of master the job's runs ran on (:func:`~sparkpredict.config.master_kind`)
        self.masters = masters
        #: every run of the job ran on a local master: its "executors" are task threads of the
        #: driver's one JVM, which they share (its memory is the runs' executor_memory_mb)
        self.local = local
        #: the runs (ids) that ran on a local master, in a history where others did not: each
        #: held its input in the driver's one heap, whatever its thread count
        self.local_runs: frozenset[str] = frozenset()
        #: why the model is not the one the registry holds (it lags the runs), said with the warnings
        self.notes: list[str] = []
        #: where the model came from, as the advice says it (Advice.model_source)
        self.source = source
        #: the store the runs were read from, for the commands the warnings name
        self.store_path: str | None = None
        #: the model was given (a folder, a mapping), not fitted on the store nor the registry's:
        #: an edit of the store's runs reaches the advice only once it is fitted again
        self.given_model = False
        #: (run id, ran a stage again) of the training runs that retried failed tasks
        #: (:func:`_recovered_runs`), oldest first
        self.recovered: list[tuple[str, bool]] = []
        self.model_name = str(getattr(model, "name_", type(model).__name__))
        cv = getattr(model, "cv_mape_", None)
        self.cv_mape = None if cv is None or not math.isfinite(float(cv)) else float(cv)
        n = getattr(model, "n_runs_", None)
        self.n_runs = int(n) if n is not None else (None if runs is None else len(runs))
        self.features = list(getattr(model, "feature_names_", None) or
                             ["input_bytes", "executors", "executor_cores", "executor_memory_mb"])
        self.ranges: dict[str, tuple[float, float]] = {
            str(k): (float(v[0]), float(v[1]))
            for k, v in (getattr(model, "training_range_", None) or {}).items()}

    # -- construction --------------------------------------------------------------------------
    @classmethod
    def resolve(cls, job: str, *, store: Any = None, models: Any = None,
                params: Any = ()) -> HistorySource:
        """``params``: the parameter names the caller gives; from a store they are checked
        against the ones its runs declare before a fit, so a misspelt one writes no fit cache."""
        if models is None:
            return cls._from_store(job, store, params)
        if isinstance(models, Mapping):
            if not models:  # "record runs of the job first" would answer another question
                raise InputError("models is an empty dict: it holds no fitted model", _MODELS_FIX)
            if job not in models:
                raise _unknown_job(job, list(models), "the models given")
            model = models[job]
            if not hasattr(model, "predict_interval"):
                raise InputError(f"models[{job!r}] is a {type(model).__name__}, not a fitted runtime model",
                                 _MODELS_FIX)
        else:
            model = cls._from_dir(job, os.fspath(models))
        source = "from the models given" if isinstance(models, Mapping) else f"from the model folder {os.fspath(models)}"
        if store is None:
            src = cls(job, model, source=source)
            src.given_model = True
            return src
        runs, spill, dyn, raw, _, read = cls._history(job, store, need_job=False)
        src = cls(job, model, runs, spill, dyn, _all_local(raw), _sweep_mix(raw), source, _size_mix(raw, read),
                  _master_kinds(raw))
        src.store_path = str(getattr(store, "path", store))
        src.local_runs = _local_run_ids(raw)
        src.given_model = True
        mixed = _measure_mix_note(job, raw)
        if mixed:
            src.notes.append(mixed)
        if runs is None or runs.empty:
            # the store was given for its runs' warnings (memory, spill): say none could come
            where = getattr(store, "path", store)
            src.notes.append(f"the store given ({where}) holds no succeeded run of {job}: the advice comes "
                             "from the model folder alone, without the history's memory and spill checks")
        else:
            seen = getattr(model, "n_runs_", None)
            seen = None if seen is None else int(seen) + int(getattr(model, "dropped_runs_", 0) or 0)
            if seen is not None and len(runs) > seen:
                flag = arg_name("models")
                flag += "" if flag.startswith("--") else "="
                # the registry's model says when it is behind the store; a folder's must too
                src.notes.append(f"the model given was fitted on {plural(seen, 'run')} of {job}, and the store "
                                 f"given holds {len(runs)} succeeded: the advice is from the model as it "
                                 f"is; fit it again on the store's runs (`sparkpredict runs`, then "
                                 f"`sparkpredict fit`), or leave out {flag} to advise from the store")
        return src

    @staticmethod
    def _from_dir(job: str, path: str) -> Any:
        if not os.path.isdir(path):
            # the caller's words: from Python store=/models=, from the CLI (cli_flags) the flags
            models = arg_name("models")
            raise InputError(f"no model folder at {path!r}",
                             "fit one with `sparkpredict fit RUNS --out DIR`, or advise from the history: "
                             f"leave out {models}{'' if models.startswith('--') else '='} and pass "
                             f"{give('store', 'PATH')}")
        from .models.persist import store_given_as_models

        given = store_given_as_models(path)
        if given is not None:
            # named as the caller gave it: --store S from the CLI, store='S' from Python
            store, message = given
            raise InputError(message, f"give the store as {give('store', store if arg_name('store').startswith('--') else repr(store))}: "
                             "suggest, report and submit then use its registry (the models "
                             "`sparkpredict retrain` committed)")
        # every file's stamp, not the index's alone: a model file rewritten in place (by hand, or
        # copied over) leaves the index as it was, and the old model would go on advising
        with os.scandir(path) as entries:
            stamp = tuple(sorted((e.name, e.stat().st_mtime_ns, e.stat().st_size) for e in entries
                                 if e.name.endswith(".json") and e.is_file()))
        key = ("dir", os.path.abspath(path), stamp, job)
        if key not in _CACHE:
            from .models.persist import (
                load_models,  # numpy only; lists known jobs if unknown
            )

            _remember(key, load_models(path, jobs=[job])[job])
        return _CACHE[key]

    @staticmethod
    def _history(job: str, store: Any, need_job: bool = True):
        """(runs of the job, disk spill per run_id, dynamic allocation seen, the job's raw runs
        rows, the run ids among ``runs`` that ran a stage again in a later attempt, what the
        stages of its succeeded declared runs read) from a store."""
        from .features.runs import dynamic_allocation, runs_table
        from .store import io as store_io

        st = store if hasattr(store, "read") else store_io.open(store)
        raw = st.runs()
        if need_job and raw.empty:
            raise _unknown_job(job, [], f"store {st.path!r}", empty=True)
        mine = raw[raw["job"] == job]
        if need_job and mine.empty:
            raise _unknown_job(job, sorted(raw["job"].dropna().unique()), f"store {st.path!r}")
        runs = runs_table(mine) if not mine.empty else None
        if need_job and (runs is None or runs.empty):
            raise _unknown_job(job, [], f"store {st.path!r}", no_success=mine)
        spill, rerun = None, frozenset[str]()
        if runs is not None and not runs.empty:
            # the attempt column rides along the spill read (one more column of the same files):
            # a stage in attempt 1 or later is Spark's recovery from a lost executor's outputs
            stages = st.read("stages", columns=["run_id", "stage_attempt_id", "disk_spilled_bytes"],
                             run_ids=list(runs["run_id"]))
            if not stages.empty:
                spill = stages.groupby("run_id")["disk_spilled_bytes"].sum()
                again = stages["stage_attempt_id"].fillna(0) > 0
                rerun = frozenset(stages.loc[again, "run_id"].astype(str))
        # as the runs table reads it: not a local master's run, which Spark gives none
        dyn = bool(dynamic_allocation(mine["properties_json"], mine.get("master")).any()) if len(mine) else False
        declared = mine.loc[(mine["status"] == "succeeded") & (mine["input_bytes_source"] == "declared"), "run_id"]
        # a declared run's row keeps the declared size alone: what its stages read is in run_inputs
        read = st.measured_inputs(run_ids=list(declared.astype(str))) if len(declared) else {}
        return runs, spill, dyn, mine, rerun, read

    @classmethod
    def _from_store(cls, job: str, store: Any, params: Any = ()) -> HistorySource:
        from .config import resolve_store
        from .features.runs import BASE_FEATURES, feature_columns
        from .store import io as store_io

        st = store if hasattr(store, "read") else store_io.open(resolve_store(store))
        version = st.version() + (_registry_snapshot(st),)
        key = ("store", st.path, hash(version), job)  # new runs or a retrain: refit / reload
        if key in _CACHE:
            return _CACHE[key]
        runs, spill, dyn, raw, rerun, read = cls._history(job, st)
        check_param_names(job, params, [c for c in feature_columns(runs) if c not in BASE_FEATURES])
        model, note, source = registry_model(job, st, raw, len(runs))
        if model is None:
            model = load_or_fit(job, st, version, runs)
            source = fitted_source(bool(note))
        src = cls(job, model, runs, spill, dyn, _all_local(raw), _sweep_mix(raw), source, _size_mix(raw, read),
                  _master_kinds(raw))
        src.store_path = st.path
        src.local_runs = _local_run_ids(raw)
        # a model of the store's runs (fitted now, or the registry's current one) was fitted on
        # these; a model given was fitted on runs this store need not hold, so none are named
        src.recovered = _recovered_runs(raw, runs, rerun, getattr(model, "n_runs_", None))
        if note:
            src.notes.append(note)
        mixed = _measure_mix_note(job, raw)
        if mixed:
            src.notes.append(mixed)
        _remember(key, src)
        return src

    def param_names(self) -> list[str]:
        """The job parameters the model takes (declared by the history's runs), sorted."""
        from .features.runs import BASE_FEATURES  # numpy and pandas stay unimported

        return sorted(c for c in self.features if c not in BASE_FEATURES)

    # -- what the advice asks ------------------------------------------------------------------
    def _latest(self, col: str) -> float | None:
        if self.runs is not None and col in self.runs:
            seen = self.runs[col].dropna()
            if col in _RESOURCES:
                # a run recorded with 0 cores or memory (a damaged or hand-written row) is no
                # size to ask for: its 0 divided the unvaried-resource warning's speed-up
                seen = seen[seen > 0]
            if len(seen):
                return float(seen.iloc[-1])
        latest = getattr(self.model, "latest_", None) or {}
        if col in latest:  # a model folder without the store: its latest training run's value
            return float(latest[col])
        defaults = getattr(self.model, "defaults_", None) or {}
        if col in defaults:  # the model's own fill-in (training median)
            return float(defaults[col])
        if col in self.ranges:
            lo, hi = self.ranges[col]
            return (lo + hi) / 2.0
        return None

    def default_column(self, col: str) -> int | None:
        v = self._latest(col)
        return None if v is None or not math.isfinite(v) else int(round(v))

    def _executors_recorded(self) -> list[float]:
        # a dynamic-allocation run's count is its mean (2.2, 2.8): not a whole number
        if self.runs is not None:
            from .models.job_runs import usable_executors

            # only counts a fit keeps: one run recorded with 10^9 executors (a typo, a damaged
            # row), which the fit drops, set the candidates' default ceiling to 1000 and its
            # knee to 34, in a history of 1 to 8 executors
            e = self.runs["executors"].to_numpy(dtype=float, na_value=float("nan"))
            return sorted({float(x) for x in e[usable_executors(e)]})
        if "executors" in self.ranges:
            return sorted(set(self.ranges["executors"]))
        return []

    def executor_counts_seen(self) -> list[int]:
        return sorted({max(int(round(x)), 1) for x in self._executors_recorded()})

    def max_executors_seen(self) -> int | None:
        seen = self._executors_recorded()
        return int(math.ceil(max(seen))) if seen else None

    def query(self, size: int, e, cores: int | None, mem: int | None,
              params: Mapping[str, float] | None = None) -> dict[str, Any]:
        import numpy as np

        n = len(e)
        given: dict[str, Any] = {"input_bytes": float(size), "executor_cores": cores,
                                 "executor_memory_mb": mem, **(params or {})}
        X: dict[str, Any] = {"executors": e}
        for col in self.features:
            if col == "executors":
                continue
            v = given.get(col)
            if v is None:
                v = self._latest(col)
            X[col] = np.full(n, np.nan if v is None else float(v))
        X.setdefault("input_bytes", np.full(n, float(size)))
        return X

    def extrapolation(self, X: Mapping[str, Any], i: int) -> dict[str, float]:
        import numpy as np

        fn = getattr(self.model, "extrapolation", None)
        if fn is not None:
            return {str(k): float(np.asarray(v)[i]) for k, v in fn(X).items() if k != "max"}
        out = {}
        for col, (lo, hi) in self.ranges.items():
            if col in X:
                x = float(np.asarray(X[col])[i])
                out[col] = x / hi - 1 if x > hi > 0 else (lo / x - 1 if 0 < x < lo else 0.0)
        return out

    def dynamic_allocation_used(self) -> bool:
        return self._dyn

    def runs_above_model(self, k: int = 3, min_ratio: float = 1.25) -> list[tuple[str, float]]:
        """The ``k`` runs furthest above the model's prediction for them, as (run id,
        runtime / prediction), those at least ``min_ratio``; [] without a store's runs.

        The prediction is out of fold where the model kept it (``slow_runs_``: the fold of its
        cross-validation that left the run out), so a run the fit followed closely still shows
        how far it lies from the others. Otherwise (a replay model, a model saved before
        they were kept) the fit is in-sample, and a run it follows closely may still have been
        slowed. Candidates for ``sparkpredict explain``."""
        import numpy as np

        r = self.runs
        if r is None or r.empty or "run_id" not in r.columns or not hasattr(self.model, "predict"):
            return []
        if getattr(self.model, "slow_runs_", None):
            present = set(r["run_id"].astype(str))
            kept = [(rid, x) for rid, x in self.model.slow_runs_ if rid in present]
            return [(rid, x) for rid, x in kept[:k] if x >= min_ratio]
        from .models.job_runs import fitted_rows

        r = r[fitted_rows(r)]  # the runs the fit kept, as the out-of-fold ratios are theirs
        if r.empty:
            return []
        ratio = r["runtime_s"].to_numpy(float) / np.asarray(self.model.predict(r), dtype=float)
        order = np.argsort(-ratio)[:k]
        return [(str(r["run_id"].iloc[j]), float(ratio[j])) for j in order if ratio[j] >= min_ratio]

    def sizes_unknown(self) -> bool:
        """No run of the job in the store recorded an input size (their sources report no bytes
        read, and none was declared): a size asked about cannot be related to them."""
        r = self.runs
        return r is not None and len(r) > 0 and not bool((r["input_bytes"] > 0).any())  # NaN: none

    def memory_holders(self, executors):
        """How many heaps ``executors`` executors hold the input in: one each, or on a local
        master the driver's one JVM, however many threads (``executors``) it runs."""
        import numpy as np

        e = np.asarray(executors, dtype=float)
        return np.ones_like(e) if self.local else e

    def _run_heaps(self, r: pd.DataFrame):
        """How many heaps each of the runs ``r`` held its input in: one for a run on a local
        master (the driver's), else one per executor. A history of local[2] runs and cluster runs
        counted each local run as two heaps, so "the input per byte that ran" was half what a
        local run held, and the count said to stay within it up to twice too many."""
        import numpy as np

        e = np.asarray(r["executors"], dtype=float)
        if self.local or not self.local_runs or "run_id" not in r:
            return self.memory_holders(e)
        return np.where(r["run_id"].astype(str).isin(self.local_runs).to_numpy(), 1.0, e)

    def warnings(self, size: int, execs: int, mem: int | None, ratio: float | None,
                 cores: int | None = None) -> list[str]:
        w = list(self.notes)
        shift = self._shift_warning()
        if shift:
            w.append(shift)
        recovered = self._recovery_warning()
        if recovered:
            w.append(recovered)
        w.extend(self._unvaried_warnings(cores, mem))
        runs = self.runs
        n = self.n_runs
        if n is not None and n < _MIN_RUNS:
            w.append(f"only {plural(n, 'run')} of {self.job} in the history; the advice is rough until "
                     f"~{_MIN_RUNS} runs at several executor counts and input sizes exist")
        seen = self.executor_counts_seen()
        if len(self._executors_recorded()) == 1:
            w.append(f"every run of {self.job} used {plural(seen[0], 'executor')}: how the runtime scales "
                     "with executors is an assumption of the model, not a measurement")
        sized = runs is not None and bool((runs["input_bytes"] > 0).any())  # NaN counts as none
        if self.sizes_unknown():
            w.append(f"no run of {self.job} recorded an input size (its sources report no bytes "
                     "read, and none was declared): the size asked about cannot be related to "
                     "them. Declare it per run (spark.sparkpredict.inputBytes, or sparkpredict "
                     "submit --input-size); for runs already recorded, sparkpredict store edit "
                     "RUN_ID... --input-size SIZE")
        elif runs is not None and runs["input_bytes"].nunique() == 1:
            w.append(f"every run of {self.job} read the same input size: how the runtime grows "
                     "with input is an assumption of the model, not a measurement")
        if ratio is not None and mem is not None and runs is not None and sized:
            w.extend(self._memory_warning(runs, size, execs, mem, ratio))
        swept, alone = self.sweep_mix
        if swept and alone:
            w.append(f"the history of {self.job} mixes {plural(swept, 'run')} of `sparkpredict sweep` "
                     f"with {alone} started on {'its' if alone == 1 else 'their'} own (submit, "
                     "spark-submit, a notebook): a sweep runs all of its applications in one warm "
                     "driver JVM, while each run started on its own pays a cold JVM's start and "
                     "first job (about 15 s more on a 2-core machine), so on small inputs their runtimes "
                     "are not one job's. Keep one kind under this job name (the other under "
                     "another --job, or `sparkpredict store edit RUN_ID... --job NAME`)")
        w.extend(self._size_warnings())
        return w

    def _size_warnings(self) -> list[str]:
        """A history that mixes declared with measured sizes where the two may differ, and
        declared sizes far from what their stages read, naming the runs and the fix."""
        from .units import format_bytes

        mix, w = self.size_mix, []
        off = mix.off()
        near = [d for d in mix.differ if d not in off]

        def listed(ds: list[tuple[str, int, int]]) -> str:
            shown = "; ".join(f"{rid} declared {format_bytes(a)}, its stages read {format_bytes(b)}"
                              for rid, a, b in ds[:3])
            return shown + (f"; and {len(ds) - 3} more" if len(ds) > 3 else "")

        if mix.measured and (mix.unknown or near):
            # Declared runs whose size agrees with what their stages read mix nothing (what
            # `submit --executors auto`, which must declare one, records for a job whose other
            # runs were measured); nor do the far ones, which the warning below names. The rest
            # may record one input as two sizes.
            mixed = mix.unknown + len(near)
            why = []
            if near:
                who = "it differs" if mixed == 1 else "one of them differs" if len(near) == 1 else \
                    f"{len(near)} of them differ"
                why.append(f"{who} "
                           f"by more than {SIZE_AGREES:.0%} from what {'its' if len(near) == 1 else 'their'} "
                           f"stages read ({listed(near)}): one input is recorded as two sizes")
            if mix.unknown and near:
                why.append(f"{plural(mix.unknown, 'other')} keep{'s' if mix.unknown == 1 else ''} no measured "
                           "size to compare (recorded before sparkpredict kept one, or no bytes read that "
                           "Spark counts)")
            elif mix.unknown:
                why.append("A declared run keeps no measured size to compare: where each declared size is what "
                           "its stages read, the sizes agree and nothing is wrong; where not, one input is "
                           "recorded as two sizes")
            lead = "; ".join(why)
            lead = lead[0].upper() + lead[1:]
            w.append(f"the history of {self.job} mixes {plural(mixed, 'run')} whose input size was declared "
                     "(--input-size, which `submit --executors auto` always declares, or "
                     f"spark.sparkpredict.inputBytes) with {mix.measured} whose size was measured (the bytes its "
                     "stages read: a file that two actions read counts twice). "
                     f"{lead}. Declare the size on every run of the job (the only way with "
                     "`submit --executors auto`) or on none; `sparkpredict store edit RUN_ID... --input-size "
                     "SIZE` declares or corrects runs recorded already")
        if off:
            import shlex

            from .config import store_for_display

            store = "" if self.store_path is None else f" --store {shlex.quote(store_for_display(self.store_path))}"
            usual = float(mix.usual or 1.0)
            rid, _, read = off[0]
            one = len(off) == 1
            # the size the job's other runs would have recorded for what its stages read
            fixed = round(read * usual)
            same = abs(usual - 1) <= SIZE_AGREES
            w.append(f"the input size declared for {plural(len(off), 'run')} of {self.job} is out of line with "
                     f"what {'its' if one else 'their'} stages read ({listed(off)}), {SIZE_OFF:g}x or more "
                     + ("away from it, where the job's runs recorded what their stages read" if same else
                        f"away from the {usual:.2g}x of it that the job's runs recorded (their median)")
                     + ": a mistyped size (a digit, GB for MB)"
                     # beside measured runs, a declared files' size of a job that reads them several
                     # times is no typo, yet as far from the measured ones (a review)
                     + (", or the files' size beside measured runs that count every read of them"
                        if self.size_mix.measured else "")
                     + ", which the model learns as the run's input. Correct "
                     f"{'it' if one else 'each'} with `sparkpredict store edit RUN_ID --input-size SIZE` "
                     f"(`sparkpredict store edit {shlex.quote(rid)} --input-size {fixed}{store}`"
                     + (")" if same else f": {usual:.2g}x what its stages read)")
                     + ", unless the size declared is meant")
        return w

    def _shift_warning(self) -> str | None:
        """For a job whose newest runs all lie beyond the interval of a model of its earlier
        runs, on one side (``JobRuntimeModel.recent_shift_``): the job changed, and a model of
        both regimes is right for neither. Names the command that leaves the older runs out."""
        import shlex

        from .config import store_for_display
        from .units import format_percent, format_time

        shift = getattr(self.model, "recent_shift_", None)
        if not shift:
            return None
        k, ratio, since = int(shift["runs"]), float(shift["ratio"]), int(shift["since_ms"])
        # a time before which every earlier run started and none of the newest: to the second
        # where that tells them apart, else to the millisecond
        ms_needed = since // 1000 * 1000 <= int(shift["previous_ms"])
        when = format_time(since, ms_precision=ms_needed)
        store = "" if self.store_path is None else f" --store {shlex.quote(store_for_display(self.store_path))}"
        command = f"sparkpredict store edit --exclude --job {shlex.quote(self.job)} --before {when}{store}"
        # "faster" from the ratio as printed, so that a reader's 1 / 0.64 is the 1.56 shown
        how = "slower" if ratio > 1 else f"{1 / max(round(ratio, 2), 0.01):.2f}x faster"
        left = int(shift.get("runs_since", k))
        rough = (f"; that leaves its {plural(left, 'run')} since, and the advice is rough until ~{_MIN_RUNS} "
                 "exist" if left < _MIN_RUNS else "")
        if self.given_model:
            # the model given keeps its finding and its runs: the edit alone changes no advice
            where = "" if store else " (with --store naming the store its runs came from)"
            rough += (f"{where}, then fit the model again on the store's runs (`sparkpredict runs`, then "
                      "`sparkpredict fit`): the model given was fitted on both kinds of run")
        day = when[:16].replace("T", " ")
        return (f"the newest {plural(k, 'run')} of {self.job} (since {day} UTC) took a median {ratio:.2f}x "
                f"the time a model of its {shift['earlier_runs']} earlier runs predicts ({how}), each beyond its "
                f"{format_percent(float(shift['level']))} interval: the job changed (a new release, other "
                "machines, a Spark upgrade?), and a model fitted on both kinds of run is right for "
                f"neither. If the change stays, leave the older runs out: `{command}`{rough}. If it "
                f"has passed (a busy cluster those days), leave these runs out instead: the same "
                "command with --after in place of --before")

    def _recovery_warning(self) -> str | None:
        """For training runs that retried failed tasks (an executor lost, tasks failed): their
        runtimes include the recovery, which the model then predicts a share of for every run.
        Whether they belong in the history is the user's call (on spot capacity they are what
        happens); the warning names the command that leaves them out."""
        import shlex

        from .config import store_for_display

        if not self.recovered:
            return None
        k, n = len(self.recovered), self.n_runs if self.n_runs is not None else len(self.recovered)
        again = sum(1 for _, r in self.recovered if r)
        ids = [rid for rid, _ in self.recovered[:_RECOVERED_NAMED]]
        store = "" if self.store_path is None else f" --store {shlex.quote(store_for_display(self.store_path))}"
        command = f"sparkpredict store edit {' '.join(map(shlex.quote, ids))} --exclude{store}"
        more = (f" (the first {len(ids)} of {k}; the advice names the others once these are out)"
                if k > len(ids) else "")
        lost = "spot or preemptible capacity taken back, a JVM killed"
        how = (f" and ran stages again, as Spark does after losing an executor ({lost})" if again == k
               else f", {again} of them running stages again as Spark does after losing an executor ({lost})"
               if again else f" (an executor lost: {lost}; or tasks that failed)")
        which = (f"{k} of the {plural(n, 'run')}" if k < n else "the one run" if k == 1 else f"all {k} runs")
        return (f"{which} the model of {self.job} was fitted on retried failed "
                f"tasks{how}. Their runtimes include the recovery, and the model predicts a share of it "
                "for every run: right where this cluster loses executors as often, too slow where it "
                f"does not. If it does not, leave them out: `{command}`{more}")

    def _unvaried_warnings(self, cores: int | None, mem: int | None) -> list[str]:
        """For a resource every run had at one value and the question another: the model
        predicts it as at the runs' value (``JobRuntimeModel.unvaried_``), which the user should
        know is an assumption."""
        from .units import format_bytes_in

        seen = getattr(self.model, "unvaried_", None) or {}
        asked = {"executor_cores": cores, "executor_memory_mb": mem}
        words = {"executor_cores": ("executor cores", lambda v: plural(int(v), "core")),
                 "executor_memory_mb": ("executor memory", lambda v: format_bytes_in(v * 2**20, True))}
        def times(r: float) -> str:  # 4x, 1.33x, 1536x: never 1.54e+03x
            return f"{r:.0f}" if r >= 100 else f"{r:.3g}"

        w = []
        for col, v0 in seen.items():
            v = asked.get(col)
            if v is None or col not in words or v == v0:
                continue
            name, show = words[col]
            bound = (f"its lower bound allows at most the {times(v / v0)}x speed-up of perfect scaling"
                     if v > v0 else "its lower bound allows no speed-up, its upper bound at least "
                     f"the {times(v0 / v)}x slow-down of perfect scaling")
            w.append(f"every run of {self.job} used {show(v0)} per executor and this asks for "
                     f"{show(v)}: the runtime is predicted as with {show(v0)}; how it changes with "
                     f"{name} is an assumption of the model, not a measurement ({bound})")
        return w

    def _memory_warning(self, r: pd.DataFrame, size: int, execs: int, mem: int, ratio: float) -> list[str]:
        import math as m

        per_mem = r["input_bytes"] / (self._run_heaps(r) * r["executor_memory_mb"] * 2**20)
        if per_mem.dropna().empty:  # executor memory never recorded: nothing to compare with
            return []
        if self.spill is not None:
            spill = r["run_id"].map(self.spill).fillna(0)
            spilled = (spill > 0) & (spill >= _HEAVY_SPILL_FRACTION * r["input_bytes"])
            ok = per_mem[~spilled].dropna()
            what = "without heavy spill"
            heavy = per_mem[spilled].dropna()
        else:
            ok, what, heavy = per_mem.dropna(), "(no spill data recorded)", per_mem.iloc[:0]
        if ok.empty:
            return [(f"every recorded run of {self.job} spilled heavily to disk; give executors "
                     "more memory (spark.executor.memory)")]
        limit = float(ok.max())
        if ratio <= limit * _SAME_RATIO:
            return []
        if ratio < _NO_SPILL_BELOW and (heavy.empty or ratio < float(heavy.min())):
            return []  # unless runs at this ratio or below spilled heavily (a skewed join does)

        def r2(x: float) -> str:  # small ratios keep two significant digits, not "0.01"
            return f"{x:.2f}" if x >= 0.1 else f"{x:.2g}"

        def spilled_note() -> str:
            if len(heavy):
                return f"; runs at {r2(float(heavy.min()))} and above spilled heavily"
            # no run spilled: nothing says where spill starts, only how far the runs went
            return "; none of its runs spilled heavily, so whether this one does is untested" \
                if self.spill is not None else ""

        if self.local:
            # more threads add no memory: only the driver's heap can grow
            from .units import format_bytes_in

            # within what ran, not only within the warning's tolerance; a size rounded in print
            # ("64MB" against a run of 31,999,986 bytes: 2048.0009 MiB) is no MiB more
            need_mib = m.ceil(size / (limit * 1.0001 * 2**20))
            # whole MiB under 10 GiB: "1.00 GiB" read as the 1024 MiB already set, for 1025
            heap = f"{need_mib} MiB" if need_mib < 10 * 1024 and need_mib % 1024 \
                else format_bytes_in(need_mib * 2**20, True)
            return [(f"the driver's {mem} MiB, which local mode's {plural(execs, 'executor')} "
                     f"{'shares' if execs == 1 else 'share'} (one JVM), holds {r2(ratio)} bytes of "
                     f"input per byte, beyond the {r2(limit)} that ran {what}{spilled_note()}; "
                     f"spark.driver.memory (--driver-memory) of >= {heap} stays within what ran "
                     "(more executors add none there)")]

        def within(e: int) -> bool:  # the check above, at e executors (ratio as the advice computes it)
            return size / (e * mem * 2**20) <= limit * _SAME_RATIO

        from .units import MAX_EXECUTORS

        # the smallest count that passes the very check above: a ceil() without its tolerance
        # named one too many for a size a hair over a multiple of what ran (64 MB against a run
        # of 31,999,986 B: 3, where 2 pass); the loops settle float rounding either way, and
        # before the cap is checked (an estimate one over it said no count up to it passes
        # where the cap itself does); the cap bounds the loops for a need far beyond it
        need = min(max(int(m.ceil(size / (limit * _SAME_RATIO * mem * 2**20))), 1), MAX_EXECUTORS + 1)
        while need > 1 and within(need - 1):
            need -= 1
        while need <= MAX_EXECUTORS and not within(need):
            need += 1
        msg = (f"{plural(execs, 'executor')} x {mem} MiB {'holds' if execs == 1 else 'hold'} {r2(ratio)} bytes of input per byte of "
               f"executor memory, beyond the {r2(limit)} that ran {what}") + spilled_note()
        if need > MAX_EXECUTORS:
            # no cluster's count: say what memory each of the advised executors would need
            from .units import format_bytes_in

            each = format_bytes_in(m.ceil(size / (limit * _SAME_RATIO * execs * 2**20)) * 2**20, True)
            return [msg + f"; no count up to {MAX_EXECUTORS:,} of {mem} MiB stays within what ran: "
                          f"{plural(execs, 'executor')} of >= {each} each would"]
        return [msg + f"; >= {need} executors (or more executor memory) stay within what ran"]


#: At most this many recovered runs are named in the command of the warning that names them.
_RECOVERED_NAMED = 10


def _recovered_runs(raw: pd.DataFrame | None, runs: pd.DataFrame | None, rerun: frozenset[str],
                    n_fitted: Any = None) -> list[tuple[str, bool]]:
    """(run id, ran a stage again) of the job's training runs that retried failed tasks: a stage
    ran again in a later attempt (``rerun``: a lost executor's shuffle outputs made again), or
    task attempts failed (the runs row's ``num_failed_tasks``), oldest first.

    From the runs rows and the stage attempts the spill check reads: the tasks table, which
    alone tells a failed try from a killed one, is read per run and too slow on a big store.
    ``num_failed_tasks`` counts killed tries too, so a run with speculation on
    (``spark.speculation``), whose losing copies are killed, counts by its stage attempts alone.
    ``n_fitted``: the runs the model was fitted on; fewer than ``runs`` (rows without a
    positive size, count or runtime were dropped) leaves out those rows."""
    if raw is None or runs is None or runs.empty or "num_failed_tasks" not in raw:
        return []
    import json

    import pandas as pd

    ok = raw[raw["status"] == "succeeded"]
    failed = pd.to_numeric(ok["num_failed_tasks"], errors="coerce").fillna(0) > 0
    ids = set(ok.loc[failed, "run_id"].astype(str)) | set(rerun)
    if not ids:
        return []

    def speculated(props: Any) -> bool:
        try:
            value = json.loads(props).get("spark.speculation", "false")
        except (TypeError, ValueError, AttributeError):
            return False
        return str(value).strip().lower() == "true"

    props = dict(zip(ok["run_id"].astype(str), ok.get("properties_json", pd.Series(None, index=ok.index))))
    ids = {rid for rid in ids if rid in rerun or not speculated(props.get(rid))}
    train = runs
    if n_fitted is not None and int(n_fitted) < len(runs):
        from .models.job_runs import fitted_rows

        train = runs[fitted_rows(runs)]
    return [(rid, rid in rerun) for rid in train["run_id"].astype(str) if rid in ids]


def check_param_names(job: str, given: Any, known: list[str]) -> None:
    """Refuse a parameter name the job's history does not declare, naming those it does."""
    unknown = sorted(set(given) - set(known))
    if unknown:
        has = f"its history declares {', '.join(sorted(known))}" if known else "its history declares none"
        raise InputError(f"job {job!r} has no recorded parameter {', '.join(map(repr, unknown))} ({has})",
                         "check the name, or record runs that declare it (sparkpredict submit "
                         "--param NAME=VALUE, or spark.sparkpredict.param.NAME) and refit")


def _sweep_mix(raw: pd.DataFrame | None) -> tuple[int, int]:
    """(succeeded runs a sweep recorded, other succeeded runs) of a job's store rows."""
    if raw is None or raw.empty or "properties_json" not in raw or "status" not in raw:
        return 0, 0
    ok = raw[raw["status"] == "succeeded"]
    swept = int(ok["properties_json"].fillna("").astype(str).str.contains(
        '"spark.sparkpredict.sweep.key"', regex=False).sum())
    return swept, len(ok) - swept


def _master_kinds(raw: pd.DataFrame | None) -> frozenset[str]:
    """The kinds of master (local, local-cluster, yarn, ...) the job's succeeded runs ran on."""
    if raw is None or raw.empty or "master" not in raw or "status" not in raw:
        return frozenset()
    from .config import master_kind

    return frozenset(k for k in map(master_kind, raw.loc[raw["status"] == "succeeded", "master"]) if k)


def _size_mix(raw: pd.DataFrame | None, read: Mapping[str, int] | None = None) -> SizeMix:
    """How the succeeded runs of ``raw`` got their input sizes; ``read``: run id -> what the
    stages of a declared run read (:meth:`~.store.io.Store.measured_inputs`)."""
    if raw is None or raw.empty or "input_bytes_source" not in raw or "status" not in raw:
        return SizeMix()
    ok = raw[raw["status"] == "succeeded"]
    src = ok["input_bytes_source"]
    declared = ok[src == "declared"]
    read = read or {}
    unknown, compared = 0, []
    # a measured run's size is what its stages read: ratio 1
    ratios = [1.0] * int(((src == "measured") & (ok["input_bytes"] > 0)).sum())
    for rid, size in zip(declared["run_id"].astype(str), declared["input_bytes"]):
        got = read.get(rid)
        # stages that read no counted bytes (generated data, a database) leave nothing to compare
        if got is None or not got > 0 or size is None or not size > 0:
            unknown += 1
            continue
        ratios.append(int(size) / got)
        compared.append((rid, int(size), int(got)))
    # the low median: of two equal camps, the smaller ratio, so that one is always the usual
    usual = statistics.median_low(ratios) if len(ratios) >= _SIZE_RUNS else None
    # A job has a usual ratio only where at least half its runs hold it: one whose declared
    # sizes do not follow what its stages read (a sweep over a database table that Spark counts
    # nothing of, joined with a fixed file; Parquet's footers where the docs say to declare)
    # spreads its ratios with its sizes, and its largest, rightly declared, are no typos.
    if usual is not None and 2 * sum(abs(r - usual) <= SIZE_AGREES * usual for r in ratios) < len(ratios):
        usual = None
    return SizeMix(len(declared), int((src == "measured").sum()), unknown, tuple(compared), usual)


#: Older runs measured this much below the newer ones are warned of (_measure_mix_note)
_MEASURE_GAP = 10.0


def _measure_mix_note(job: str, raw: pd.DataFrame | None) -> str | None:
    """The warning for a job whose measured runs span :data:`~.store.schema.INPUT_MEASURED_SINCE`
    with the older ones' inputs far below the newer ones': on Spark 4 a Parquet job's older
    runs were measured by the footers its vectored reads left in the task metric."""
    import pandas as pd

    cols = {"status", "input_bytes_source", "sparkpredict_version", "input_bytes", "run_id"}
    if raw is None or raw.empty or not cols <= set(raw.columns):
        return None
    from .store.schema import INPUT_MEASURED_SINCE, measured_before
    from .units import format_bytes

    ok = raw[(raw["status"] == "succeeded") & (raw["input_bytes_source"] == "measured")]
    old = ok["sparkpredict_version"].map(measured_before).astype(bool)
    if ok.empty or not old.any() or old.all():
        return None
    size = pd.to_numeric(ok["input_bytes"], errors="coerce")
    before, since = float(size[old].median()), float(size[~old].median())
    if not since > 0 or not before * _MEASURE_GAP <= since:  # NaN: no warning
        return None
    ids = list(ok.loc[old, "run_id"].astype(str))
    shown = " ".join(ids[:3]) + (f" (and {len(ids) - 3} more)" if len(ids) > 3 else "")
    release = ".".join(map(str, INPUT_MEASURED_SINCE))
    return (f"{plural(len(ids), 'run')} of {job} had {'its' if len(ids) == 1 else 'their'} input measured by "
            f"sparkpredict before {release} (median {format_bytes(before)}), far below the "
            f"{int((~old).sum())} measured since (median {format_bytes(since)}): since {release} a SQL "
            "file scan counts the size of its files, where Spark 4's vectored Parquet reads had left "
            f"the count at about their footers. If {job} reads Parquet, correct the older runs "
            "(`sparkpredict store edit RUN_ID... --input-size SIZE`; runs from event logs: ingest "
            "the logs again, into a fresh store if `store compact` merged their copies) or leave "
            f"them out (`sparkpredict store edit RUN_ID... --exclude`): {shown}")


def _local_run_ids(raw: pd.DataFrame | None) -> frozenset[str]:
    """The ids of the runs that ran on a local master (``local``, ``local[N]``, ...)."""
    if raw is None or raw.empty or "master" not in raw:
        return frozenset()
    from .config import LOCAL_MASTER

    local = raw["master"].astype(str).str.strip().str.fullmatch(LOCAL_MASTER.pattern).fillna(False)
    return frozenset(raw.loc[local.astype(bool), "run_id"].astype(str))


def _all_local(raw: pd.DataFrame | None) -> bool:
    """Every one of the job's runs ran on a local master (``local``, ``local[N]``, ...)."""
    if raw is None or raw.empty or "master" not in raw:
        return False
    from .config import LOCAL_MASTER

    return bool(raw["master"].astype(str).str.strip().str.fullmatch(LOCAL_MASTER.pattern).all())


def _unknown_job(job: str, known: list, where: str, empty: bool = False,
                 no_success: pd.DataFrame | None = None) -> Exception:
    """``no_success``: the job's store rows, none of them succeeded (what they are is said)."""
    from .config import shown_job
    from .errors import UnknownJobError

    if empty:
        return UnknownJobError(f"{where} has no runs yet",
                               "record runs first (sparkpredict.attach() in the job's driver, sparkpredict "
                               f"submit, demo or ingest), or pass {give('models', 'DIR')}")
    if no_success is not None:
        from .fitting import no_succeeded_run

        what, fix = no_succeeded_run(no_success)
        err = UnknownJobError(f"job {job!r} has no succeeded runs in {where}: {what}", fix)
        err.no_success = True  # type: ignore[attr-defined]  # submit's fix differs for it
        return err
    # a name with spaces around it (recorded from a --conf or an app name) is quoted: it looked
    # like the one asked for; one with a newline split the hint across lines. Ten names of 300
    # characters made a hint of 3,000: each is cut as `store summary` cuts it (the "did you
    # mean" below keeps its name whole, to be copied)
    names = ", ".join(shown_job(k, 60) for k in known[:10]) + (" ..." if len(known) > 10 else "")
    if not known:
        return UnknownJobError(f"no job {job!r} in {where}", "record runs of the job first")
    close = _closest(job, known)
    listed = f"use one of: {names}{close}"
    # a job that ran without the listener (no attach(), plain spark-submit) is not in the store,
    # and its name is no typo of another: say why it is missing, not only what is there
    unrecorded = "" if close or not where.startswith("store") else (
        f"; if {job!r} ran, it was not recorded: attach the listener to it "
        f"(sparkpredict.attach(builder, job={job!r}) in its driver, or sparkpredict submit --job {job})")
    err = UnknownJobError(f"no job {job!r} in {where}", listed + unrecorded)
    err.listed = listed  # type: ignore[attr-defined]  # submit's fix names its own first step
    return err


def _closest(job: str, known: list) -> str:
    """" (did you mean 'x'?)" for a known name within a typo or a case of ``job``, else "": a
    store of many jobs lists ten of them, and the one meant may not be among those."""
    import difflib

    names = [str(k) for k in known]
    folded = {n.casefold(): n for n in names}
    close = ([folded[job.casefold()]] if job.casefold() in folded
             else difflib.get_close_matches(job, names, n=1, cutoff=0.6))
    return f" (did you mean {close[0]!r}?)" if close else ""
