"""The server's pure parts: error kinds to statuses, token format and hashing, key
scopes, the messages-to-exchanges pairing, the derived conversation id."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from sonality import errors
from sonality.core.keys import hash_secret, mint, parse_token, secret_matches
from sonality.models import ApiKey, KeyScope
from sonality.server.chat import derived_conversation
from sonality.server.errors import body, status_and_kind
from sonality.server.rest import ChatMessage, exchanges


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
    """admin allows write and read, write allows read, read allows only read."""
    allowed = {(a.value, b.value) for a in KeyScope for b in KeyScope if a.allows(b)}
    assert allowed == {
        ("read", "read"),
        ("write", "read"),
        ("write", "write"),
        ("admin", "read"),
        ("admin", "write"),
        ("admin", "admin"),
    }


def test_only_admin_keys_may_be_global() -> None:
    """A read or write key without personas is refused; an admin key without sees all."""
    now = datetime(2026, 1, 1, tzinfo=UTC)
    with pytest.raises(errors.ValidationError):
        ApiKey(id="k1", secret_hash="0" * 64, scope=KeyScope.WRITE, created_at=now)
    admin = ApiKey(id="k2", secret_hash="0" * 64, scope=KeyScope.ADMIN, created_at=now)
    assert admin.sees("anyone")
    bound = ApiKey(
        id="k3", secret_hash="0" * 64, scope=KeyScope.READ, persona_ids=("a",), created_at=now
    )
    assert bound.sees("a") and not bound.sees("b")


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
