"""Runs of one job on a grid of input sizes and executor counts, their runtimes drawn from a known
law, and the models fitted on them: the setup of the tests of the hybrid model's rules below the
recorded counts (tests/test_below_counts*.py), each with a law of its own."""
from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import pandas as pd

from sparkpredict.models.hybrid import JobRuntimeModel

GIB = 2**30


def grid_runs(truth: Callable, sizes: Iterable[float], counts: Iterable[float], seed: int,
              noise: float, repeats: int = 3) -> pd.DataFrame:
    """``repeats`` runs of job "j" at each size (GiB) and count, ``truth(S, E)`` seconds times
    log-normal noise of sigma ``noise`` (seeded: the same runs every time)."""
    rng = np.random.default_rng(seed)
    rows = [{"job": "j", "input_bytes": S * GIB, "executors": float(E),
             "runtime_s": float(truth(S, E)) * rng.lognormal(0, noise)}
            for S in sizes for E in counts for _ in range(repeats)]
    return pd.DataFrame(rows)


def fitted(runs: Callable[[int], pd.DataFrame], seeds: Iterable[int] = range(3)) -> list[JobRuntimeModel]:
    """The default model fitted on ``runs(seed)`` for each seed."""
    return [JobRuntimeModel().fit(runs(seed)) for seed in seeds]


def saved_without(m: JobRuntimeModel, rule: str) -> JobRuntimeModel:
    """The same fitted model as a file saved before ``rule`` (its key in ``to_dict``) loads."""
    d = m.to_dict()
    del d[rule]
    return JobRuntimeModel.from_dict(d)
