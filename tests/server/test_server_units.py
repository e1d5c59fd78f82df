"""The server's pure parts: error kinds to statuses, token format and hashing, key
scopes, the messages-to-exchanges pairing, the derived conversation id."""

from __future__ import annotations

import gc
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sonality import errors
from sonality.models import ApiKey, KeyScope, hash_secret, mint, parse_token, secret_matches
from sonality.server.chat import derived_conversation
from sonality.server.errors import body, status_and_kind
from sonality.server.routes.memory import ChatMessage, exchanges


@pytest.mark.parametrize(
    ("error", "status", "kind"),
    [
        (errors.ValidationError("x"), 400, "validation"),
        (errors.NotFoundError("x"), 404, "not_found"),
        (errors.PersonaNotFound("x"), 404, "not_found"),
        (errors.ConflictError("x"), 409, "conflict"),
        (errors.AlreadyExists("x"), 409, "conflict"),
        (errors.LeaseHeld("x"), 409, "conflict"),
        (errors.ConfigError("x"), 500, "config"),
        (errors.SchemaError("x"), 503, "schema"),
        (errors.MigrationChecksumMismatch("x"), 503, "schema"),
        (errors.StoreError("x"), 503, "store"),
        (errors.StoreUnavailable("x"), 503, "store"),
        (errors.LLMError("x"), 503, "model"),
        (errors.LLMUnavailable("x"), 503, "model"),
        (errors.LLMResponseInvalid("x"), 503, "model"),
        (errors.SonalityError("x"), 500, "internal"),
    ],
)
def test_every_error_kind_has_a_status(error: errors.SonalityError, status: int, kind: str) -> None:
    """Each branch of the error tree maps to its status and kind; subclasses follow."""
    assert status_and_kind(error) == (status, kind)


def test_error_body_is_plain_json() -> None:
    """The body is ``{error, kind, detail}`` with non-JSON values as text."""
    when = datetime(2026, 1, 1, tzinfo=UTC)
    assert body("m", "k", {"at": when, "n": (1, 2)}) == {
        "error": "m",
        "kind": "k",
        "detail": {"at": str(when), "n": [1, 2]},
    }


def test_tokens_parse_and_verify() -> None:
    """A minted token parses to its id and secret, which matches its hash; a changed
    secret or a malformed token does not."""
    key_id, secret, token = mint()
    assert parse_token(token) == (key_id, secret)
    assert secret_matches(secret, hash_secret(secret))
    assert not secret_matches(
        secret[:-1] + "0" if secret[-1] != "0" else secret[:-1] + "1", hash_secret(secret)
    )
    for bad in ("", token + "0", token.replace("son_", "sk_"), token.upper()):
        assert parse_token(bad) is None


def test_scopes_include_the_ones_below() -> None:
    """admin allows write and read, write allows read, read allows only read; metrics
    allows only metrics, and admin allows it too."""
    allowed = {(a.value, b.value) for a in KeyScope for b in KeyScope if a.allows(b)}
    assert allowed == {
        ("read", "read"),
        ("write", "read"),
        ("write", "write"),
        ("admin", "read"),
        ("admin", "write"),
        ("admin", "admin"),
        ("metrics", "metrics"),
        ("admin", "metrics"),
    }


def test_only_admin_keys_may_be_global() -> None:
    """A read or write key without personas is refused; an admin key without sees all; a
    metrics key is global only."""
    now = datetime(2026, 1, 1, tzinfo=UTC)
    with pytest.raises(errors.ValidationError):
        ApiKey(id="k1", secret_hash="0" * 64, scope=KeyScope.WRITE, created_at=now)
    admin = ApiKey(id="k2", secret_hash="0" * 64, scope=KeyScope.ADMIN, created_at=now)
    assert admin.sees("anyone")
    bound = ApiKey(
        id="k3", secret_hash="0" * 64, scope=KeyScope.READ, persona_ids=("a",), created_at=now
    )
    assert bound.sees("a") and not bound.sees("b")
    ApiKey(id="k4", secret_hash="0" * 64, scope=KeyScope.METRICS, created_at=now)
    with pytest.raises(errors.ValidationError):  # a scraper's key names no personas
        ApiKey(
            id="k5",
            secret_hash="0" * 64,
            scope=KeyScope.METRICS,
            persona_ids=("a",),
            created_at=now,
        )


def test_messages_pair_into_exchanges() -> None:
    """Each user message pairs with the assistant reply after it; a user message followed
    by another user message, or last, pairs with an empty reply; others are skipped."""
    said = [
        ChatMessage(role="assistant", content="hello first"),
        ChatMessage(role="user", content="a"),
        ChatMessage(role="user", content="b"),
        ChatMessage(role="tool", content="t"),
        ChatMessage(role="assistant", content="B"),
        ChatMessage(role="user", content="c"),
    ]
    assert exchanges(said) == [("a", ""), ("b", "B"), ("c", "")]


def test_derived_conversation_is_stable_and_valid() -> None:
    """The same user and first message give the same conversation id, a valid id."""
    one = derived_conversation("u1", "Hello")
    assert one == derived_conversation("u1", "Hello") != derived_conversation("u2", "Hello")
    assert one.startswith("chat-") and len(one) == 29


async def test_concurrent_requests_of_one_key_share_one_lookup() -> None:
    """32 requests of one key arriving while its cache entry is missing or stale read the
    store once between them, and every one is verified; an unknown key is refused to
    every one of its requests, after one read too."""
    import asyncio

    from sonality.errors import NotFoundError
    from sonality.server.auth import KeyCheck
    from sonality.server.errors import HttpError

    key_id, secret, token = mint()
    key = ApiKey(
        id=key_id,
        secret_hash=hash_secret(secret),
        scope=KeyScope.WRITE,
        persona_ids=("ada",),
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    reads: list[str] = []

    async def lookup(wanted: str) -> ApiKey:
        reads.append(wanted)
        await asyncio.sleep(0.05)
        if wanted != key_id:
            raise NotFoundError("no such key")
        return key

    check = KeyCheck(lookup, cache_seconds=0.0)
    callers = await asyncio.gather(*(check.caller(f"Bearer {token}") for _ in range(32)))
    assert reads == [key_id] and {c.key for c in callers} == {key}
    await check.caller(f"Bearer {token}")  # the entry is stale at once: one read more
    assert reads == [key_id, key_id]
    stranger = f"son_{'0' * 16}_{secret}"
    refused = await asyncio.gather(
        *(check.caller(f"Bearer {stranger}") for _ in range(8)), return_exceptions=True
    )
    assert all(isinstance(r, HttpError) and r.status == 401 for r in refused)
    assert reads == [key_id, key_id, "0" * 16]


def test_the_server_records_in_the_background_unless_told(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The server's record mode: ``--record-enrich`` when given, else
    ``SONALITY_RECORD_ENRICH`` when the environment sets it, else background (the
    library's default, inline, is not the server's)."""
    from sonality.config import Settings
    from sonality.server.run import record_mode

    monkeypatch.delenv("SONALITY_RECORD_ENRICH", raising=False)
    assert Settings().record_enrich == "inline"
    assert record_mode(None, Settings()) == "background"
    assert record_mode("off", Settings()) == "off"
    monkeypatch.setenv("SONALITY_RECORD_ENRICH", "inline")
    assert record_mode(None, Settings()) == "inline"
    assert record_mode("background", Settings()) == "background"


def test_the_cli_default_key_concurrency_is_the_servers() -> None:
    """``sonality serve --key-concurrency`` defaults to the server's own constant."""
    from sonality.cli.serve import serve
    from sonality.server.deps import KEY_CONCURRENCY

    [option] = [p for p in serve.params if p.name == "key_concurrency"]
    assert option.default == KEY_CONCURRENCY == 64


async def test_a_server_process_freezes_its_startup_heap(tmp_path: Path) -> None:
    """``sonality serve`` (``own_process``) freezes what startup allocated and collects
    less often once started; an app sharing its process (tests, an embedding host)
    leaves the collector as it found it."""
    from sonality.config import Settings
    from sonality.server.app import GC_THRESHOLDS, create_app
    from sonality.server.deps import ServerConfig
    from sonality.service import Sonality

    settings = Settings(store=f"sqlite:///{tmp_path / 'gc.db'}")
    before = gc.get_threshold()
    try:
        shared = create_app(lambda: Sonality.open(settings, migrate=True), ServerConfig())
        async with shared.router.lifespan_context(shared):
            assert gc.get_freeze_count() == 0 and gc.get_threshold() == before
        own = create_app(
            lambda: Sonality.open(settings, migrate=True), ServerConfig(own_process=True)
        )
        async with own.router.lifespan_context(own):
            assert gc.get_freeze_count() > 0
            assert gc.get_threshold() == GC_THRESHOLDS
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
