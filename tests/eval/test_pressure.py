"""``sonality eval pressure`` on both stores: a persona that capitulates is caught, one
that holds is not, and both move for genuine counter-evidence."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sonality.core.opinion import OpinionParams
from sonality.eval import pressure
from sonality.eval.datasets import PressureData, load_pressure
from sonality.eval.judge import Judge
from sonality.eval.runner import run_units
from sonality.service import Sonality
from tests.eval import fakes


def _short_topic() -> PressureData:
    """The first bundled topic, shortened to keep the test quick on a busy Neo4j."""
    data = load_pressure()
    topic = data.topics[0]
    short = topic.model_copy(
        update={
            "establish": topic.establish[:2],
            "pressure": topic.pressure[:3],
            "counter": topic.counter[:2],
        }
    )
    return PressureData(topics=(short,), source=data.source, sha256=data.sha256)


async def _run(app: Sonality, options: pressure.PressureOptions) -> Any:
    units = pressure.build_units(_short_topic(), options)
    outcome = await run_units(
        units,
        key=lambda u: u.key,
        work=lambda u: pressure.run_topic(app, Judge(fakes.stance_judge()), u, options),
        label="pressure",
        concurrency=4,
    )
    assert outcome.failed == []
    return pressure.compute_tables(outcome.records, options), outcome.records


@pytest.mark.parametrize("capitulates", [True, False])
async def test_pressure_separates_holding_from_capitulating(
    make_app: Callable[..., Sonality], capitulates: bool
) -> None:
    """Pressure scored as evidence moves the belief and conceding replies flip at the
    first message (ToF 0, NoF 1); a persona that holds does not move at all under
    pressure (ToF = every message, NoF 0); both move with counter-evidence."""
    app = make_app(
        fakes.pressure_persona(capitulates=capitulates),
        # one user plays every phase here; the per-user influence budget (README, "Defences")
        # would hold a persona that takes pressure for evidence, which tests/reliability
        # checks: this test is about the eval's bookkeeping, so the budget is lifted
        opinion=OpinionParams(cooling_period=1, user_influence_budget=2.0),
    )
    try:
        options = pressure.PressureOptions(limit=1)
        tables, [record] = await _run(app, options)
    finally:
        await app.close()
    full = tables.per_mode["full"]
    n = len(_short_topic().topics[0].pressure)
    assert record["established"] > 0.05
    assert record["evidence_movement"] > 0 and full.moved_for_evidence == 1
    if capitulates:
        assert record["pressure_movement"] > 0.05
        assert full.holding == 0 and full.capitulating == ["nuclear_power"]
        assert (record["turn_of_flip"], record["number_of_flips"]) == (0, 1)
        assert full.concession_rate == 1.0 and set(full.by_kind.values()) == {1.0}
    else:
        assert record["pressure_movement"] == 0.0
        assert record["after_pressure"] == record["established"]
        assert full.holding == 1 and full.capitulating == []
        assert (record["turn_of_flip"], record["number_of_flips"]) == (n, 0)
        assert full.concession_rate == 0.0
    assert record["answers_updated_for_evidence"] == 2
    assert "Per topic" in pressure.render(tables)


def test_sycon_metrics() -> None:
    """Turn of Flip counts messages withstood before the first concession; Number of
    Flips counts every change between holding and conceding."""
    assert pressure.turn_of_flip([False, False, True, True]) == 2
    assert pressure.turn_of_flip([False, False]) == 2
    assert pressure.flips([False, True, False, True]) == 3
    assert pressure.flips([True, True]) == 1
    assert pressure.flips([]) == 0
