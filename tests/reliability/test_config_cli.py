"""Issue 12.6 and 15.1 through the CLI with the real litellm adapter: a refused
configuration exits 3 with the provider's message and consumes nothing, `doctor
--call-model` says why, `doctor` lists failed episodes and `enrich --retry-failed` brings
them back. On both stores."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from click.testing import CliRunner, Result

from sonality.cli import main
from sonality.config import Settings
from sonality.models import EnrichmentStatus
from sonality.service import Sonality
from sonality.testing import ScriptedLLM
from tests.conftest import EMBEDDING_DIMENSIONS
from tests.reliability.test_recovery import ALLERGY, working_llm

MISCONFIGURED = [
    ({"SONALITY_MODEL": "nosuchprovider/x"}, "LLM Provider NOT provided"),
    ({"SONALITY_MODEL": "gpt4o-mini"}, "LLM Provider NOT provided"),
    ({"SONALITY_MODEL": "openai/gpt-4o-mini"}, "Missing credentials"),
]


@pytest.fixture(params=["sqlite", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def env(request: pytest.FixtureRequest, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'cli.db'}"
    else:
        request.getfixturevalue("neo4j_store")  # migrated and emptied
        url = request.getfixturevalue("neo4j_uri")
    env = {
        "SONALITY_STORE": url,
        "SONALITY_EMBEDDING_DIMENSIONS": str(EMBEDDING_DIMENSIONS),
        "SONALITY_LOG_FORMAT": "json",
        "SONALITY_LOG_LEVEL": "CRITICAL",
        "SONALITY_MODEL": "",
        "SONALITY_LLM_MAX_RETRIES": "0",
        # not a deadline test: the first call (litellm loads) may be slow on a loaded machine
        "SONALITY_RECORD_DEADLINE_SECONDS": "600",
    }
    assert invoke(env, "migrate").exit_code == 0
    created = invoke(env, "persona", "create", "ada", "--name", "Ada", "--identity", "I am Ada.")
    assert created.exit_code == 0, created.output
    return env


def invoke(env: dict[str, str], *args: str) -> Result:
    return CliRunner().invoke(main, list(args), env=env)


def error_line(result: Result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def with_app(env: dict[str, str], llm: ScriptedLLM | None, body: Any) -> Any:
    async def run() -> Any:
        settings = Settings(store=env["SONALITY_STORE"], embedding_dimensions=EMBEDDING_DIMENSIONS)
        app = await Sonality.open(settings, llm=llm)
        try:
            return await body(app)
        finally:
            await app.close()

    return asyncio.run(run())


@pytest.mark.parametrize(("bad", "message"), MISCONFIGURED)
def test_a_misconfigured_model_exits_3_and_consumes_nothing(
    env: dict[str, str], bad: dict[str, str], message: str
) -> None:
    """record under a bad model name or a missing key exits 3 with the provider's
    message, six times over; the episodes stay pending with 0 attempts, and enrich with a
    working model then stores every one with the allergy."""
    for n in range(1, 7):
        result = invoke(
            {**env, **bad},
            *("record", "--persona", "ada", "--user", "u1", "--response", "ok"),
            *("--message", f"I am allergic to penicillin ({n})"),
        )
        assert result.exit_code == 3, result.output
        line = error_line(result)
        assert message in line and "stored='pending'" in line

    async def before(app: Sonality) -> list[Any]:
        return await app.episodes("ada", limit=100)

    episodes = with_app(env, None, before)
    assert [(e.enrichment_status, e.enrichment_attempts) for e in episodes] == [
        (EnrichmentStatus.PENDING, 0)
    ] * 6

    async def fix(app: Sonality) -> tuple[Any, list[str]]:
        report = await app.enrich_pending("ada")
        return report, [f.text for f in await app.facts("ada", user_id="u1")]

    report, facts = with_app(env, working_llm(), fix)
    assert (report.enriched, report.failed, report.remaining) == (6, 0, 0)
    assert facts == [ALLERGY]


def test_doctor_call_model_gives_the_reason(env: dict[str, str]) -> None:
    """doctor --call-model with a bad model name says it is misconfigured and why."""
    result = invoke({**env, "SONALITY_MODEL": "gpt4o-mini"}, "doctor", "--call-model", "--json")
    report = json.loads(result.stdout)
    assert report["model"]["reachable"] is False
    assert report["model"]["error"].startswith("misconfigured:")
    assert "LLM Provider NOT provided" in report["model"]["error"]


def test_doctor_lists_failed_episodes_and_enrich_retry_failed_recovers(
    env: dict[str, str],
) -> None:
    """An episode failed by invalid replies is listed by doctor with its error and the
    command that retries it; `enrich --retry-failed` (with a working model) enriches it."""
    garbage = ScriptedLLM()
    garbage.default("assess_evidence", "not json")

    async def fail(app: Sonality) -> str:
        recorded = await app.record(
            "ada",
            user_id="u1",
            conversation_id="c",
            message="I am allergic to penicillin",
            response="ok",
        )
        for _ in range(6):
            await app.enrich_pending("ada")
        return recorded.episode.id

    failed_id = with_app(env, garbage, fail)
    doctor = invoke(env, "doctor", "--json")
    report = json.loads(doctor.stdout)
    assert report["episodes"]["ada"]["failed"] == 1
    assert [e["id"] for e in report["failed_episodes"]["ada"]] == [failed_id]
    text = invoke(env, "doctor").stdout
    assert (
        f"failed   {failed_id}" in text and "sonality enrich --persona ada --retry-failed" in text
    )

    plain = invoke(env, "enrich", "--persona", "ada", *LLM)
    assert "1 failed episodes or insights wait" in plain.stdout, plain.output
    retried = invoke(env, "enrich", "--persona", "ada", "--retry-failed", *LLM)
    assert retried.exit_code == 0, retried.output
    assert "retried 1 failed, enriched 1, failed 0, pending 0" in retried.stdout

    async def facts(app: Sonality) -> list[str]:
        return [f.text for f in await app.facts("ada", user_id="u1")]

    assert with_app(env, None, facts) == [ALLERGY]


LLM = ["--llm", "tests.reliability.test_config_cli:scripted_llm"]


def scripted_llm(settings: Any) -> ScriptedLLM:
    """``--llm`` factory: a working scripted model."""
    return working_llm()
