"""The stage model's random forest class, at module level so that a fitted stage model pickles
(``pickle`` and ``joblib`` find a class by its module and name; a class defined inside a
function has no such name). This module imports scikit-learn at its top, so only
:func:`sparkpredict.models.stage_forest.quiet_forest` imports it, when a forest is built.
"""
from __future__ import annotations

import warnings

from sklearn.ensemble import RandomForestRegressor


class QuietForest(RandomForestRegressor):
    """A random forest whose out-of-bag pass stays silent on tiny pools (few runs)."""

    def fit(self, X, y, sample_weight=None):
        self.set_params(oob_score=len(y) >= 3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return super().fit(X, y, sample_weight)


__all__ = ["QuietForest"]
