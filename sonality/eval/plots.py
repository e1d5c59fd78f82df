"""PNG plots of the evaluation tables, with matplotlib (the ``[eval]`` extra).

The only module of Sonality that imports matplotlib, and only inside its functions, with
the non-interactive Agg backend; nothing else imports this module at start-up. Without
matplotlib, :func:`available` is False and the commands skip the plot and say so.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["available", "bars", "lines"]


def available() -> bool:
    """True when matplotlib is installed (``pip install 'sonality[eval]'``)."""
    return importlib.util.find_spec("matplotlib") is not None


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def bars(
    path: Path,
    *,
    title: str,
    groups: Sequence[str],
    series: Mapping[str, Sequence[float | None]],
    low: Mapping[str, Sequence[float | None]] | None = None,
    high: Mapping[str, Sequence[float | None]] | None = None,
    ylabel: str,
    ylim: tuple[float, float] | None = None,
) -> Path:
    """Grouped bars: one group per entry of ``groups``, one bar per series, with optional
    error bars from ``low``/``high`` (absolute values)."""
    plt = _pyplot()
    names = list(series)
    width = 0.8 / max(len(names), 1)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.4 * len(groups) + 2), 4.2))
    for i, name in enumerate(names):
        values = [v if v is not None else 0.0 for v in series[name]]
        xs = [g + (i - (len(names) - 1) / 2) * width for g in range(len(groups))]
        err = None
        if low is not None and high is not None:
            lo = [
                max(0.0, v - (lw if lw is not None else v))
                for v, lw in zip(values, low[name], strict=True)
            ]
            hi = [
                max(0.0, (hg if hg is not None else v) - v)
                for v, hg in zip(values, high[name], strict=True)
            ]
            err = [lo, hi]
        ax.bar(xs, values, width, label=name, yerr=err, capsize=3)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups)
    ax.set_ylabel(ylabel)
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def lines(
    path: Path,
    *,
    title: str,
    x: Mapping[str, Sequence[float]],
    series: Mapping[str, Sequence[float | None]],
    xlabel: str,
    ylabel: str,
    ylim: tuple[float, float] | None = None,
) -> Path:
    """One line per series over its own x values."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.0, 4.2))
    for name, ys in series.items():
        points = [(a, b) for a, b in zip(x[name], ys, strict=True) if b is not None]
        ax.plot([p[0] for p in points], [p[1] for p in points], marker=".", label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
