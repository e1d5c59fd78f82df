"""Small, dependency-free statistics for the evaluation tables.

- :func:`wilson`: a pass rate with its 95% Wilson score interval (well-behaved at 0 and 1
  and for small samples, where the normal approximation is not).
- :func:`bootstrap_gain`: the relative gain of one mode over the baseline with a 95%
  percentile-bootstrap interval, resampling *paired* units (the same dialogue in both
  modes), seeded so a table is reproducible — MIRROR reports bootstrap intervals too.
- :func:`describe`: mean, median, min, max, standard deviation and percentiles.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

__all__ = ["Gain", "Rate", "Spread", "bootstrap_gain", "describe", "percentile", "wilson"]

Z95 = 1.959963984540054


class Rate(BaseModel):
    """A proportion with its 95% interval."""

    model_config = ConfigDict(frozen=True)

    passed: int
    total: int
    rate: float | None
    low: float | None
    high: float | None


class Gain(BaseModel):
    """Relative gain ``(p_mode - p_base) / p_base`` with a 95% bootstrap interval."""

    model_config = ConfigDict(frozen=True)

    gain: float | None
    low: float | None
    high: float | None
    pairs: int


class Spread(BaseModel):
    """Summary of a sample of durations or sizes."""

    model_config = ConfigDict(frozen=True)

    n: int
    mean: float | None = None
    median: float | None = None
    p75: float | None = None
    p95: float | None = None
    min: float | None = None
    max: float | None = None
    std: float | None = None


def wilson(passed: int, total: int) -> Rate:
    """``passed``/``total`` with its 95% Wilson score interval (all None when total is 0)."""
    if total <= 0:
        return Rate(passed=0, total=0, rate=None, low=None, high=None)
    p = passed / total
    z2 = Z95 * Z95
    centre = (p + z2 / (2 * total)) / (1 + z2 / total)
    half = Z95 * math.sqrt(p * (1 - p) / total + z2 / (4 * total * total)) / (1 + z2 / total)
    return Rate(
        passed=passed,
        total=total,
        rate=p,
        low=max(0.0, centre - half),
        high=min(1.0, centre + half),
    )


def _gain(base: float, other: float) -> float | None:
    return None if base == 0 else (other - base) / base


def bootstrap_gain(pairs: Sequence[tuple[bool, bool]], *, seed: int, resamples: int = 2000) -> Gain:
    """Relative gain of the second outcome over the first across paired units."""
    import numpy as np

    n = len(pairs)
    if n == 0:
        return Gain(gain=None, low=None, high=None, pairs=0)
    first = np.array([a for a, _ in pairs], dtype=float)
    second = np.array([b for _, b in pairs], dtype=float)
    point = _gain(float(first.mean()), float(second.mean()))
    draws = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    base = first[draws].mean(axis=1)
    other = second[draws].mean(axis=1)
    defined = base > 0
    if point is None or int(defined.sum()) < resamples // 2:
        return Gain(gain=point, low=None, high=None, pairs=n)
    gains = (other[defined] - base[defined]) / base[defined]
    low, high = np.percentile(gains, [2.5, 97.5])
    return Gain(gain=point, low=float(low), high=float(high), pairs=n)


def percentile(values: Sequence[float], q: float, *, presorted: bool = False) -> float:
    """The ``q``-th percentile (0-100) by linear interpolation between closest ranks."""
    if not values:
        raise ValueError("percentile of an empty sample")
    data = list(values) if presorted else sorted(values)
    if len(data) == 1:
        return float(data[0])
    rank = (len(data) - 1) * q / 100
    low = math.floor(rank)
    high = math.ceil(rank)
    return float(data[low] + (data[high] - data[low]) * (rank - low))


def describe(values: Sequence[float]) -> Spread:
    """Mean, median, p75, p95, min, max and (sample) standard deviation."""
    if not values:
        return Spread(n=0)
    data = sorted(values)
    return Spread(
        n=len(data),
        mean=statistics.fmean(data),
        median=statistics.median(data),
        p75=percentile(data, 75, presorted=True),
        p95=percentile(data, 95, presorted=True),
        min=data[0],
        max=data[-1],
        std=statistics.stdev(data) if len(data) > 1 else 0.0,
    )
