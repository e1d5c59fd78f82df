"""Issue 15.6: the bad-input corpus (``corpus/*.jsonl``), one parametrised test over every
case, on both stores. Each case either is rejected — a Sonality error with the documented
exit code and a one-line message, and nothing written — or is stored verbatim.

Case kinds (one JSON object per line; ``why`` says what the case probes):

- ``api``: ``{"call": method, "args": [...], "kwargs": {...}}`` on the ``Sonality`` facade
  (persona ``ada`` and user ``u1`` exist, one episode recorded);
- ``cli``: ``{"args": [...]}`` through the ``sonality`` command (``{tmp}`` in an argument
  is the test's directory; ``files`` maps names to ``{"hex": ...}`` bytes written there);
- ``env``: ``{"env": {...}, "args": [...]}``: a setting, read before anything is opened;
- ``reply``: ``{"reply": ...}``: what the model answers to ``assess_evidence`` for a fresh
  episode; ``expect`` then describes what is stored;
- ``ingest``: one line of a file for ``sonality ingest``, between two good lines: ``line``
  (a JSON value, written as JSON), ``raw`` (text, or a list of parts joined) or ``hex``
  (bytes). A bad line is reported on stderr as ``line 2: …`` (one line) with the exit
  code, and both good lines are stored all the same; ``{"stored": true}`` means the line
  is stored verbatim. Only behaviour is checked (reports, exit codes, what is stored),
  never how ingest writes.

Values JSON cannot carry are tagged: ``{"$int": "…"}`` (a big integer), ``{"$repeat":
[text, n]}``, ``{"$bytes_arg": hex}`` (a CLI argument decoded with surrogateescape, as
the OS hands over undecodable bytes); JSON's ``\\ud800`` escape gives a lone surrogate.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sonality.cli import main
from sonality.errors import SonalityError
from sonality.llm.embedders import HashEmbedder
from sonality.service import Sonality
from sonality.testing import FrozenClock, ScriptedLLM
from tests.conftest import EMBEDDING_DIMENSIONS

CORPUS = Path(__file__).parent / "corpus"
SECRET = "hunter2-secret"
"""Any case value containing it must never be echoed in an error."""


def load() -> list[Any]:
    cases = []
    for path in sorted(CORPUS.glob("*.jsonl")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if line.strip():
                case = json.loads(line)
                cases.append(pytest.param(case, id=f"{path.stem}-{n:03d}-{case['id']}"))
    return cases


CASES = load()


def decode(value: Any, tmp: Path) -> Any:
    if isinstance(value, list):
        return [decode(v, tmp) for v in value]
    if isinstance(value, dict):
        if "$int" in value:
            return int(value["$int"])
        if "$repeat" in value:
            text, n = value["$repeat"]
            return str(text) * int(n)
        if "$bytes_arg" in value:
            return bytes.fromhex(value["$bytes_arg"]).decode("utf-8", "surrogateescape")
        return {k: decode(v, tmp) for k, v in value.items()}
    if isinstance(value, str):
        return value.replace("{tmp}", str(tmp))
    return value


def evidence(score: float = 0.6) -> dict[str, Any]:
    return {
        "score": score,
        "reasoning_type": "empirical",
        "source_reliability": 0.6,
        "internal_consistency": 0.8,
        "novelty": 0.5,
        "topics": ["tea"],
        "direction": "supports",
    }


def model(reply: Any = None) -> ScriptedLLM:
    llm = ScriptedLLM()
    if reply is None:
        llm.default("assess_evidence", {"evidence": evidence(), "facts": [], "importance": 3})
    else:
        llm.default("assess_evidence", reply)
    llm.default("extract_insight", {"insight": None})
    return llm


async def fingerprint(store: Any) -> Any:
    """Everything a rejected input could have written, as comparable data."""
    state = []
    for persona in await store.list_personas():
        episodes = await store.list_episodes(persona.id, limit=1000)
        facts = []
        for user in sorted({e.user_id for e in episodes}):
            facts += [f.text for f in await store.list_facts(persona.id, user)]
        beliefs = [(b.topic, b.position) for b in await store.list_beliefs(persona.id)]
        rows = sorted((e.id, e.user_id, e.user_message, e.enrichment_attempts) for e in episodes)
        state.append((persona.model_dump(exclude={"updated_at"}), rows, sorted(facts), beliefs))
    return state


def make_app(store: Any, llm: ScriptedLLM) -> Sonality:
    return Sonality(
        store=store,
        llm=llm,
        embedder=HashEmbedder(EMBEDDING_DIMENSIONS),
        clock=FrozenClock(),
        count_tokens=lambda text: max(1, len(text) // 4),
    )


@pytest.fixture
async def seeded(store: Any) -> Sonality:
    app = make_app(store, model())
    await app.create_persona("ada", name="Ada", core_identity="I am Ada.")
    await app.record(
        "ada", user_id="u1", conversation_id="c1", message="Tea is good.", response="ok"
    )
    # an inline record past its deadline on a loaded machine leaves the rest to the lane:
    # let it finish, so that no background write lands between a case's two fingerprints
    await app.drain("ada")
    return app


def one_line(message: str) -> None:
    assert message and "\n" not in message and "Traceback" not in message, message
    assert SECRET not in message


@pytest.mark.parametrize("case", CASES)
async def test_bad_input_is_one_line_error_or_stored_verbatim(
    case: dict[str, Any],
    seeded: Sonality,
    store: Any,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    """A corpus case is rejected with its documented exit code, one line, nothing written
    (or, for a case expecting storage, stored verbatim), identically on both stores."""
    expect = case["expect"]
    before = await fingerprint(store)
    kind = case["kind"]
    if kind == "api":
        await api_case(seeded, store, case, expect, tmp_path)
    elif kind in ("cli", "env"):
        await cli_case(request, store, case, expect, tmp_path)
    elif kind == "reply":
        await reply_case(seeded, store, case, expect)
        return
    elif kind == "ingest":
        await ingest_case(request, store, case, expect, tmp_path)
        return
    else:
        raise AssertionError(f"unknown case kind {kind!r}")
    if "exit" in expect:
        assert await fingerprint(store) == before


async def api_case(
    app: Sonality, store: Any, case: dict[str, Any], expect: dict[str, Any], tmp: Path
) -> None:
    method: Callable[..., Any] = getattr(app, case["call"])
    args = decode(case.get("args", []), tmp)
    kwargs = decode(case.get("kwargs", {}), tmp)
    if "exit" in expect:
        with pytest.raises(SonalityError) as caught:
            await method(*args, **kwargs)
        assert caught.value.exit_code == expect["exit"], caught.value
        one_line(str(caught.value))
        assert expect.get("says", "") in caught.value.message, caught.value
        return
    result = await method(*args, **kwargs)
    stored = await store.get_episode("ada", result.episode.id)
    assert stored.user_message == kwargs["message"]
    assert stored.agent_response == kwargs["response"]


async def cli_case(
    request: pytest.FixtureRequest,
    store: Any,
    case: dict[str, Any],
    expect: dict[str, Any],
    tmp: Path,
) -> None:
    for name, spec in case.get("files", {}).items():
        (tmp / name).write_bytes(bytes.fromhex(spec["hex"]))
    env = {**cli_env(request, store), **decode(case.get("env", {}), tmp)}
    args = decode(case["args"], tmp)
    result = await asyncio.to_thread(CliRunner().invoke, main, args, env=env)
    output = result.stdout + result.stderr
    assert SECRET not in output
    assert result.exit_code == expect["exit"], output
    errors = [line for line in result.stderr.splitlines() if line.startswith(("error:", "Error:"))]
    assert len(errors) == 1 and "Traceback" not in output, output
    if "says" in expect:
        assert expect["says"] in errors[0], errors[0]


def cli_env(request: pytest.FixtureRequest, store: Any) -> dict[str, str]:
    return {
        "SONALITY_STORE": store_url(request, store),
        "SONALITY_EMBEDDING_DIMENSIONS": str(EMBEDDING_DIMENSIONS),
        "SONALITY_LOG_FORMAT": "json",
        "SONALITY_LOG_LEVEL": "CRITICAL",
        "SONALITY_MODEL": "",
    }


async def ingest_case(
    request: pytest.FixtureRequest,
    store: Any,
    case: dict[str, Any],
    expect: dict[str, Any],
    tmp: Path,
) -> None:
    if "hex" in case:
        line = bytes.fromhex(case["hex"])
    elif "raw" in case:
        raw = decode(case["raw"], tmp)
        line = ("".join(raw) if isinstance(raw, list) else raw).encode("utf-8")
    else:
        line = json.dumps(decode(case["line"], tmp)).encode("utf-8")
    good = [
        {"message": f"before {case['id']}", "response": "kept", "user_id": "g1"},
        {"message": f"after {case['id']}", "response": "kept", "user_id": "g1"},
    ]
    path = tmp / "exchanges.jsonl"
    path.write_bytes(b"\n".join([json.dumps(good[0]).encode(), line, json.dumps(good[1]).encode()]))
    facts_and_beliefs = [state[2:] for state in await fingerprint(store)]
    before = {e.id for e in await store.list_episodes("ada", limit=1000)}
    args = ["-q", "ingest", str(path), "--persona", "ada", "--no-enrich"]
    result = await asyncio.to_thread(CliRunner().invoke, main, args, env=cli_env(request, store))
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output
    assert result.exception is None or isinstance(result.exception, SystemExit), output
    reports = [x for x in result.stderr.splitlines() if x.startswith("line ")]
    errors = [x for x in result.stderr.splitlines() if x.startswith(("error:", "Error:"))]
    new = [e for e in await store.list_episodes("ada", limit=1000) if e.id not in before]
    stored = sorted((e.user_message, e.agent_response, e.user_id) for e in new)
    kept = [(g["message"], g["response"], g["user_id"]) for g in good]
    if "exit" in expect:
        assert result.exit_code == expect["exit"], output
        assert len(reports) == 1 and reports[0].startswith("line 2: "), output
        assert expect["says"] in reports[0], reports[0]
        one_line(reports[0])
        assert len(errors) == 1 and "lines=[2]" in errors[0], output
        assert stored == sorted(kept), stored
    else:
        assert result.exit_code == 0 and reports == errors == [], output
        written = json.loads(line)
        middle = (written["message"], written.get("response", ""), "user")  # --user's default
        assert stored == sorted([*kept, middle]), stored
    assert [state[2:] for state in await fingerprint(store)] == facts_and_beliefs


def store_url(request: pytest.FixtureRequest, store: Any) -> str:
    if type(store).__name__ == "SqliteStore":
        return f"sqlite:///{store.path}"
    return str(request.getfixturevalue("neo4j_uri"))


async def reply_case(
    app: Sonality, store: Any, case: dict[str, Any], expect: dict[str, Any]
) -> None:
    app = make_app(store, model(case["reply"]))
    recorded = await app.record(
        "ada", user_id="u2", conversation_id="c2", message="About tea.", response="ok"
    )
    episode = await store.get_episode("ada", recorded.episode.id)
    assert episode.enrichment_status.value == expect["status"]
    assert episode.enrichment_attempts == expect.get("attempts", 0)
    facts = [(f.kind.value, f.text, f.severity) for f in await store.list_facts("ada", "u2")]
    assert sorted(facts) == sorted(tuple(f) for f in expect.get("facts", []))
    for name in expect.get("defaulted", []):
        assert name in episode.defaulted, episode.defaulted
    staged = [s for s in await store.list_staged("ada") if s.episode_id == episode.id]
    assert len(staged) == expect.get("staged", 0)
