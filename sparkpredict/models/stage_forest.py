"""The stage model's random forests: scikit-learn's regressor, imported only when a forest is
built (a model loaded from JSON predicts with numpy alone, :mod:`sparkpredict.models.forest_json`),
with its out-of-bag pass kept quiet on the tiny pools a few runs give.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


def quiet_forest(**kw):
    """A :class:`~sparkpredict.models.quiet_forest.QuietForest` with ``kw``; scikit-learn is
    imported here, on the first forest built, not with this module."""
    from .quiet_forest import QuietForest

    return QuietForest(**kw)


def importances(forest, names: list[str]) -> pd.Series:
    import pandas as pd

    return pd.Series(forest.feature_importances_, index=names).sort_values(ascending=False)
