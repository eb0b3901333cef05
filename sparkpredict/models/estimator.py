"""scikit-learn's estimator protocol for the runtime models, without importing scikit-learn.

``get_params``/``set_params`` (so ``sklearn.base.clone``, ``cross_val_score``, ``GridSearchCV``
and pipelines take the models), ``score`` (R², as scikit-learn's regressors),
``__sklearn_tags__`` (a regressor) and a repr of the parameters. Inheriting
``sklearn.base.BaseEstimator`` would import scikit-learn with the model class, which the CLI's
fast path (``suggest --models``) must not.
"""
from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..errors import InputError
from .columns import column


def without_interval(model: Any) -> bool:
    """A model with no out-of-fold error (one kind fitted on too few runs to leave any out):
    ``max_confidence()`` 0, no interval at any level. suggest, predict, fit and the report say
    so instead of showing a "0% interval" (the replay of one run, and the stage model below 3
    runs, are such models); a model without ``max_confidence`` is not one."""
    most = getattr(model, "max_confidence", None)
    return most is not None and most() <= 0


def checked_seed(value: Any) -> int | None:
    """``random_state`` as a saved model records it: an int (a numpy int from a parameter grid
    made one) or None. A RandomState, which scikit-learn takes, has no JSON form: refused before
    the fit, not as a TypeError at the save or a corrupt file at the load."""
    if value is None:
        return None
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    raise InputError(f"random_state must be an int or None, got {type(value).__name__}",
                     "pass a seed such as random_state=0")


@contextmanager
def kept_on_failure(model: Any) -> Iterator[None]:
    """A fit inside this leaves ``model`` as it was when it raises: a failed refit had replaced
    some fitted attributes and kept others, and predict then mixed the two (an IndexError, or
    a training range that moved the interval)."""
    before = dict(model.__dict__)
    try:
        yield
    except BaseException:
        model.__dict__.clear()
        model.__dict__.update(before)
        raise


class RuntimeEstimator:
    """Mixin: the constructor's keyword parameters are the estimator's parameters."""

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [n for n, p in sig.parameters.items()
                if n != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's parameters and their values (scikit-learn's contract)."""
        return {n: getattr(self, n) for n in self._param_names()}

    def set_params(self, **params: Any) -> RuntimeEstimator:
        """Set constructor parameters; an unknown name is a ``ValueError``, as in scikit-learn."""
        valid = self._param_names()
        for name, value in params.items():
            if name not in valid:
                raise ValueError(f"invalid parameter {name!r} for {type(self).__name__}; "
                                 f"valid parameters: {', '.join(valid)}")
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        """``StageRuntimeModel(store='hist', mode='auto', ...)``: the class and its parameters,
        as scikit-learn's estimators print (a model that prints more defines its own)."""
        params = ", ".join(f"{n}={_short_repr(v)}" for n, v in self.get_params().items())
        return f"{type(self).__name__}({params})"

    def predict(self, X: Any) -> np.ndarray:  # every model defines its own
        raise NotImplementedError

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """R² of :meth:`predict` on ``X`` against the runtimes ``y`` (seconds)."""
        y = np.asarray(y, dtype=float).ravel()
        p = np.asarray(self.predict(X), dtype=float).ravel()
        w = np.ones_like(y) if sample_weight is None else np.asarray(sample_weight, dtype=float).ravel()
        mean = np.average(y, weights=w)
        total = float(np.sum(w * (y - mean) ** 2))
        resid = float(np.sum(w * (y - p) ** 2))
        return 1.0 - resid / total if total > 0 else (1.0 if resid == 0 else 0.0)

    def __sklearn_tags__(self) -> Any:
        # only scikit-learn calls this, so it is imported already
        from sklearn.utils import RegressorTags, Tags, TargetTags

        return Tags(estimator_type="regressor", target_tags=TargetTags(required=True),
                    regressor_tags=RegressorTags())


def positive_query_column(X: Mapping[str, Any], name: str, n: int | None) -> np.ndarray:
    """Query column ``name`` (``input_bytes`` or ``executors``) as ``n`` floats, every one finite
    and positive, else the :class:`InputError` every runtime model gives: a model would answer
    a negative size or 0 executors with a runtime no run can have."""
    v = column(X, name, n)
    if v is None:
        raise InputError(f"query lacks column {name!r}", "give input_bytes and executors for every row")
    if not np.all(np.isfinite(v)) or np.any(v <= 0):
        raise InputError(f"query column {name!r} has NaN, infinite, zero or negative values",
                         "ask about positive input sizes and executor counts")
    return v


def _short_repr(value: Any) -> str:
    """A parameter's value on one line: a table (``tables={"runs": DataFrame}``) as its type and
    shape, not its rows."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_short_repr(v)}" for k, v in value.items()) + "}"
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple) and not isinstance(value, np.generic):
        return f"<{type(value).__name__} {'x'.join(str(n) for n in shape)}>"
    return repr(value)


__all__ = ["RuntimeEstimator", "checked_seed", "kept_on_failure", "positive_query_column"]
