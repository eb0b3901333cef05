"""``sparkpredict demo``: the whole loop in about two minutes on a laptop.

1. a small sweep of the word-count workload (2-16 MB x 1-3 executors, local Spark), each run
   recorded by the listener into the store (the embedded default unless ``store=``);
2. fit the job's runtime model from the recorded runs;
3. advice for an input four times larger than any recorded: the cheapest count, then the
   cheapest that meets a deadline (:data:`DEADLINE_MARGIN` above the lowest upper bound of the
   counts the sweep ran, so that one is certain to exist);
4. the HTML report;
5. where everything is.

The sweep uses ``local[E]`` masters (E task threads in one driver JVM, recorded as E
one-core executors): a ``local-cluster`` run starts executor JVMs and costs 15-35 s more per
run on 2 cores, too slow for a demo. Runs already in the store are reused, so a second demo is
quick. Each step after the sweep degrades to a message when it cannot be done.
"""
from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .sweep import Progress, SweepResult, plan_sweep, run_sweep
from .units import plural

log = logging.getLogger(__name__)

DEMO_WORKLOAD = "wordcount"
DEMO_SIZES = "2MB,4MB,8MB,16MB"
DEMO_EXECUTORS = "1,2,3"
#: The advice is asked for this multiple of the largest recorded input.
ADVICE_FACTOR = 4
#: The demo's deadline: this much above the lowest upper bound of the swept counts, in whole seconds.
DEADLINE_MARGIN = 1.05


@dataclass
class DemoResult:
    """What the demo made and where it is."""

    store: str
    workdir: Path
    sweep: SweepResult | None = None
    model_name: str | None = None
    cv_mape: float | None = None
    advice: Any = None
    #: the same question with a deadline (``deadline_advice.deadline_s``) some count meets
    deadline_advice: Any = None
    advice_input_bytes: int | None = None
    report_path: Path | None = None
    models_dir: Path | None = None
    messages: list[str] = field(default_factory=list)


def default_workdir() -> Path:
    return Path.home() / ".sparkpredict" / "demo"


def _check_workdir(wd: Path, store_path: str) -> None:
    """Refuse, before the sweep, a work folder the demo cannot use: a file, a path with a comma,
    or a folder in the store (a store of earlier runs, or the one this demo records into),
    which the sweep's data and Spark's scratch would fill with files the store does not own."""
    from .errors import InputError
    from .outputs import enclosing_store

    fix = "give --workdir a folder outside the store (default: ~/.sparkpredict/demo)"
    if wd.exists() and not wd.is_dir():
        raise InputError(f"the demo's work folder {str(wd)!r} is a file", fix)
    if "," in str(wd):
        # spark.local.dir is a comma-separated list: Spark's scratch would go to two other folders
        raise InputError(f"the demo's work folder {str(wd)!r} holds a comma, which Spark reads as a list of "
                         "folders (spark.local.dir)",
                         "give --workdir a folder whose path has no comma (default: ~/.sparkpredict/demo)")
    inside = enclosing_store(wd)
    if inside is not None:
        raise InputError(f"the demo's work folder {str(wd)!r} lies inside a history store ({str(inside)!r})", fix)
    if "://" not in store_path:
        st = Path(store_path).expanduser().resolve()
        if wd == st or st in wd.parents:
            raise InputError(f"the demo's work folder {str(wd)!r} lies inside its store {str(st)!r}", fix)


def run_demo(store: str | os.PathLike | None = None, workdir: str | os.PathLike | None = None,
             progress: Progress | None = None, workload: str = DEMO_WORKLOAD, sizes: str = DEMO_SIZES,
             executors: str = DEMO_EXECUTORS, master: str = "local", repeats: int = 1) -> DemoResult:
    """Run the demo (see the module docstring) and return what it made.

    Parameters
    ----------
    store : path, optional
        History store; default the embedded local store (``~/.sparkpredict/store``).
    workdir : path, optional
        Where the report, fitted models, generated data and Spark scratch go; default
        ``~/.sparkpredict/demo``.

    Raises
    ------
    SparkPredictError
        When the sweep itself cannot run (no JDK, unwritable store, ...). Later steps record
        their failure in ``messages`` instead.
    """
    from .config import embedded_store, resolve_store

    # the embedded store, not a cluster's spark-defaults.conf one: toy runs stay out of it
    store_path = resolve_store(store if store is not None else embedded_store())
    wd = Path(workdir).expanduser().resolve() if workdir else default_workdir()
    _check_workdir(wd, store_path)
    try:
        wd.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        from .errors import InputError

        # a read-only home, say: the generic "check that the path exists" named no option
        raise InputError(f"cannot create the demo's work folder {str(wd)!r}: {exc.strerror or exc}",
                         "give --workdir a folder you can write to (default: ~/.sparkpredict/demo), "
                         "and --store one for the runs (default: ~/.sparkpredict/store)") from None
    res = DemoResult(store=store_path, workdir=wd)

    plan = plan_sweep(workload, sizes, executors, repeats=repeats, master=master)
    res.sweep = run_sweep(plan, store=store_path, cache_dir=wd / "data", workdir=wd, progress=progress)
    if res.sweep.failed:
        res.messages.append(f"{plural(len(res.sweep.failed), 'sweep run')} failed: {res.sweep.failed[0].error}")

    models: dict = {}
    try:
        from .features.runs import runs_table
        from .models.persist import fit_all, save_models
        from .store import io as store_io

        version = store_io.open(store_path).version()  # before the runs: what the fit saw at least
        runs = runs_table(store_path)
        runs = runs[runs["job"] == plan.job]
        models = fit_all(runs)
        m = models[plan.job]
        res.model_name, res.cv_mape = getattr(m, "name_", None), getattr(m, "cv_mape_", None)
        from .advice_cache import prepare_advice

        # the fit `sparkpredict suggest --store` would make: kept, so the command printed under
        # "next:" answers from it
        prepare_advice(store_path, list(runs["run_id"]), fitted=models, fitted_version=version)
        try:
            res.models_dir = wd / "models"
            save_models(models, res.models_dir)
        except Exception as exc:  # saving is a convenience; the advice uses the models in memory  # noqa: BLE001
            res.models_dir = None
            res.messages.append(f"models not saved: {getattr(exc, 'message', exc)}")
    except Exception as exc:  # the demo reports each step that failed and goes on  # noqa: BLE001
        res.messages.append(f"no runtime model: {getattr(exc, 'message', exc)}")

    if models:
        try:
            from .advise import suggest_executors

            target = int(max(plan.sizes_bytes) * ADVICE_FACTOR)
            res.advice_input_bytes = target
            res.advice = suggest_executors(plan.job, target, store=store_path, models=models)
            # within the executor counts the sweep ran: beyond them the advice extrapolates
            reach = min(c.upper_s for c in res.advice.candidates if c.executors <= max(plan.executors))
            res.deadline_advice = suggest_executors(plan.job, target, deadline_s=math.ceil(reach * DEADLINE_MARGIN),
                                                    store=store_path, models=models)
        except Exception as exc:  # the demo reports each step that failed and goes on  # noqa: BLE001
            res.messages.append(f"no advice: {getattr(exc, 'message', exc)}")

    try:
        from .report import build_report

        rep = build_report(wd / "report.html", store=store_path, jobs=[plan.job],
                           models=models or None, advice_factor=ADVICE_FACTOR)
        res.report_path = rep.path
        res.messages.extend(rep.warnings)
    except Exception as exc:  # the demo reports each step that failed and goes on  # noqa: BLE001
        res.messages.append(f"no report: {getattr(exc, 'message', exc)}")
    return res


__all__ = ["DemoResult", "default_workdir", "run_demo"]
