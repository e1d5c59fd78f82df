"""Plain-text (Markdown) tables for the summaries."""

from __future__ import annotations

from collections.abc import Sequence

from sonality.eval.stats import Gain, Rate, Spread

__all__ = ["fmt_gain", "fmt_num", "fmt_rate", "fmt_spread_ms", "table"]


def table(title: str, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table with a bold title line; columns padded for a terminal."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(widths[i]) for i, c in enumerate(cells)) + " |"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([f"**{title}**", "", line(headers), rule, *(line(r) for r in rows), ""])


def fmt_rate(rate: Rate) -> str:
    """``84% [78-89] n=80``."""
    if rate.rate is None or rate.low is None or rate.high is None:
        return "-"
    return f"{rate.rate:.0%} [{rate.low * 100:.0f}-{rate.high * 100:.0f}] n={rate.total}"


def fmt_gain(gain: Gain) -> str:
    """``+21.3% [+8.1, +36.0]``."""
    if gain.gain is None:
        return "-"
    if gain.low is None or gain.high is None:
        return f"{gain.gain:+.1%}"
    return f"{gain.gain:+.1%} [{gain.low:+.1%}, {gain.high:+.1%}]"


def fmt_num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def fmt_spread_ms(spread: Spread) -> list[str]:
    """mean, median, p75, p95, min, max, std as seconds with two decimals."""
    if spread.n == 0:
        return ["-"] * 7
    values = (
        spread.mean,
        spread.median,
        spread.p75,
        spread.p95,
        spread.min,
        spread.max,
        spread.std,
    )
    return [f"{(v or 0) / 1000:.2f}s" for v in values]
