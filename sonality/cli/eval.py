"""``sonality eval``: the evaluation suite (curate, latency, pressure, retention).

The commands live with the suite in :mod:`sonality.eval.commands`, which imports click
only; the suite's own modules (and matplotlib, from the ``[eval]`` extra) load when a
command runs, so ``sonality --help`` stays fast.
"""

from __future__ import annotations

from sonality.eval.commands import eval_group

__all__ = ["eval_group"]
