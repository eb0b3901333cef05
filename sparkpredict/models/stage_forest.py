"""The stage model's random forests: scikit-learn's regressor, imported only when a forest is
built (a model loaded from JSON predicts with numpy alone, :mod:`sparkpredict.models.forest_json`),
with its out-of-bag pass kept quiet on the tiny pools a few runs give.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


def _quiet_forest_class():
    from sklearn.ensemble import RandomForestRegressor

    class QuietForest(RandomForestRegressor):
        """A random forest whose out-of-bag pass stays silent on tiny pools (few runs)."""

        def fit(self, X, y, sample_weight=None):
            import warnings

            self.set_params(oob_score=len(y) >= 3)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                return super().fit(X, y, sample_weight)

    return QuietForest


def quiet_forest(**kw):
    global _QUIET
    if _QUIET is None:
        _QUIET = _quiet_forest_class()
    return _QUIET(**kw)


_QUIET = None


def importances(forest, names: list[str]) -> pd.Series:
    import pandas as pd

    return pd.Series(forest.feature_importances_, index=names).sort_values(ascending=False)
