"""`sonality doctor` warns about users whose active constraints pass the context's compact
cap (issue 25), on both stores: only constraints count, only active ones, per persona."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sonality.cli import main
from sonality.cli.schema import COMPACT_CONSTRAINT_TOKENS as SHOWN_BOUND
from sonality.mind.context import COMPACT_CONSTRAINT_TOKENS
from tests.conftest import EMBEDDING_DIMENSIONS

WORDS = ("sesame", "walnut", "shellfish", "latex", "pollen", "gluten", "mustard", "lupin")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        "SONALITY_STORE": f"sqlite:///{tmp_path / 'doctor.db'}",
        "SONALITY_LOG_FORMAT": "json",
        "SONALITY_LOG_LEVEL": "CRITICAL",
        "SONALITY_MODEL": "",
        "SONALITY_EMBEDDING_DIMENSIONS": str(EMBEDDING_DIMENSIONS),
    }


def run(env: dict[str, str], *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)
    return result.exit_code, result.stdout


def long_fact(n: int) -> str:
    """A distinct constraint of about 1,900 characters (some 500+ tokens)."""
    parts = [f"{WORDS[(n + i) % len(WORDS)]}{(n * 31 + i * 7) % 997}" for i in range(190)]
    return f"Constraint {n}: never serve " + " ".join(parts)


def disclose(env: dict[str, str], persona: str, user: str, facts: list[tuple[str, str]]) -> None:
    code, out = run(
        env, "record", "--persona", persona, "--user", user, "--message", "about me",
        "--response", "noted", "--id", f"e-{persona}-{user}", "--json",
    )  # fmt: skip
    assert code == 0, out
    for kind, text in facts:
        code, out = run(
            env, "fact", "add", "--persona", persona, "--user", user,
            "--episode", f"e-{persona}-{user}", "--kind", kind, "--text", text,
        )  # fmt: skip
        assert code == 0, out


def test_doctor_names_users_whose_constraints_pass_the_cap(either_env: dict[str, str]) -> None:
    """Ten long constraints of one user pass 4,000 tokens: doctor names that user (with
    the count and tokens) and stays healthy; a user with as much text in preferences, one
    with few constraints, and the same user id under another persona are not named; once
    enough constraints are retracted the warning goes."""
    env = either_env
    for pid in ("ada", "bo"):
        assert run(env, "persona", "create", pid, "--name", pid, "--identity", "I am.")[0] == 0
    disclose(env, "ada", "heavy", [("constraint", long_fact(n)) for n in range(10)])
    disclose(
        env,
        "ada",
        "light",
        [("constraint", "No peanuts."), *(("preference", long_fact(n)) for n in range(10, 20))],
    )
    disclose(env, "bo", "heavy", [("constraint", long_fact(30))])

    code, out = run(env, "doctor", "--json")
    assert code == 0, out
    warned = json.loads(out)["oversized_constraints"]
    assert warned["bound_tokens"] == SHOWN_BOUND == COMPACT_CONSTRAINT_TOKENS
    assert list(warned["personas"]) == ["ada"]
    [user] = warned["personas"]["ada"]
    assert user["user_id"] == "heavy" and user["constraints"] == 10
    assert user["tokens"] > COMPACT_CONSTRAINT_TOKENS
    code, out = run(env, "doctor")
    assert code == 0 and "WARNING  user heavy: 10 active constraints" in out

    code, out = run(env, "facts", "--persona", "ada", "--user", "heavy", "--json")
    for fact in json.loads(out)[:6]:
        assert run(env, "fact", "retract", "--persona", "ada", fact["id"])[0] == 0
    code, out = run(env, "doctor", "--json")
    assert code == 0 and json.loads(out)["oversized_constraints"]["personas"] == {}
