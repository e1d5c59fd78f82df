"""Bearer API keys: which key is calling, what it may touch, and how many of its
requests may run at once.

A request names its key as ``Authorization: Bearer son_<id>_<secret>``. The key is read
from the store by its id and the secret checked against the stored hash; a verified key is
remembered for ``cache_seconds``. A revocation (or a persona deletion, which takes the
persona from every key) made through this process's facade empties the cache at once
(``Sonality.key_epoch``); one made elsewhere (the CLI, another server) reaches this process
within ``cache_seconds``. A key sees only its personas: another persona answers exactly as
an unknown one does (404), so a probe learns nothing about what exists. A persona-bound key
grants persona *incarnations*: :meth:`Caller.confirm` reads the persona a request names and
refuses (404) one made after the grant under the same id, whatever the cache holds.
``--no-auth`` (loopback only) makes every caller an admin of every persona.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

from sonality.errors import NotFoundError, PersonaNotFound, ValidationError
from sonality.models import (
    ApiKey,
    KeyScope,
    Persona,
    hash_secret,
    parse_token,
    secret_matches,
    validate_identifier,
)
from sonality.server.errors import HttpError

__all__ = ["NO_AUTH", "RETRY_AFTER_SECONDS", "Caller", "KeyCheck", "Limiter"]


@dataclass(frozen=True)
class Caller:
    """Who is calling: a verified key, or nobody when auth is off (then anything goes).
    ``persona`` reads a persona by id (the facade's ``persona``) for :meth:`confirm`."""

    key: ApiKey | None
    persona: Callable[[str], Awaitable[Persona]] | None = None

    async def confirm(self, persona_id: str) -> None:
        """For a persona-bound key that sees ``persona_id``: the persona stored under it
        now is the incarnation the key was granted, else "no such persona" (404), as for
        a persona the key does not see. (An unknown persona is left to the route.)"""
        key = self.key
        if key is None or not key.persona_ids or self.persona is None:
            return
        if not key.sees(persona_id):
            return  # ``require`` answers for it
        try:
            found = await self.persona(persona_id)
        except (PersonaNotFound, ValidationError):
            return
        if not key.grants(found):
            raise PersonaNotFound("no such persona", persona_id=persona_id)

    @property
    def key_id(self) -> str:
        return self.key.id if self.key is not None else "-"

    def sees(self, persona_id: str) -> bool:
        return self.key is None or self.key.sees(persona_id)

    def require(self, persona_id: str, scope: KeyScope) -> None:
        """Raise unless the caller may act on ``persona_id`` with ``scope``: an unseen
        persona is "no such persona" (404, the same body as an unknown one), a missing
        scope is 403. A malformed id is a ``ValidationError`` (400) first, whoever asks."""
        try:
            validate_identifier(persona_id, kind="persona_id")
        except ValueError as exc:
            raise ValidationError(str(exc), field="persona_id") from None
        if not self.sees(persona_id):
            raise PersonaNotFound("no such persona", persona_id=persona_id)
        self.require_scope(scope)

    def require_scope(self, scope: KeyScope) -> None:
        if self.key is not None and not self.key.scope.allows(scope):
            raise HttpError(
                403,
                "forbidden",
                f"this key has scope {self.key.scope.value}; {scope.value} is needed",
                needed=scope.value,
            )

    def visible(self, persona_ids: Iterable[str]) -> list[str]:
        return [p for p in persona_ids if self.sees(p)]


NO_AUTH = Caller(key=None)


@dataclass
class KeyCheck:
    """Verifies Bearer tokens against the store (``lookup`` is the facade's ``key``).

    A verified key is remembered for ``cache_seconds``; when that runs out, the requests
    of the key that arrive meanwhile share one store read (the first one's) instead of
    each making its own: a client with 32 connections on one key costs one read per
    ``cache_seconds``, not 32 at once.

    ``epoch`` (the facade's ``key_epoch``) moves when this process revokes a key or
    deletes a persona: the cache is emptied then; ``persona`` is what callers
    :meth:`~Caller.confirm` incarnations with."""

    lookup: Callable[[str], Awaitable[ApiKey]]
    cache_seconds: float = 5.0
    epoch: Callable[[], int] = lambda: 0
    persona: Callable[[str], Awaitable[Persona]] | None = None
    _verified: dict[str, tuple[ApiKey, float]] = field(default_factory=dict)
    _reading: dict[str, asyncio.Future[ApiKey]] = field(default_factory=dict)
    _epoch: int = 0

    async def caller(self, authorization: str | None) -> Caller:
        """The caller an ``Authorization`` header names (401 when it names none)."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise HttpError(401, "unauthorized", "an API key is needed: Authorization: Bearer")
        token = token.strip()
        now = time.monotonic()
        epoch = self.epoch()
        if epoch != self._epoch:  # a revocation or deletion here: verify afresh
            self._verified.clear()
            self._reading.clear()  # a read begun before it may not be shared after
            self._epoch = epoch
        digest = hash_secret(token) if token.isascii() else ""
        cached = self._verified.get(digest)
        if cached is not None and cached[1] > now:
            return Caller(key=cached[0], persona=self.persona)
        parsed = parse_token(token)
        if parsed is None:
            raise HttpError(401, "unauthorized", "not a Sonality API key")
        key_id, secret = parsed
        reading = self._reading.get(digest)
        if reading is None:
            reading = asyncio.ensure_future(self.lookup(key_id))
            self._reading[digest] = reading
            reading.add_done_callback(lambda _: self._reading.pop(digest, None))
        try:
            key = await asyncio.shield(reading)
        except NotFoundError:
            raise HttpError(401, "unauthorized", "unknown or revoked API key") from None
        if key.revoked_at is not None or not secret_matches(secret, key.secret_hash):
            raise HttpError(401, "unauthorized", "unknown or revoked API key")
        if len(self._verified) > 10_000:
            self._verified.clear()
        self._verified[digest] = (key, time.monotonic() + self.cache_seconds)
        return Caller(key=key, persona=self.persona)


RETRY_AFTER_SECONDS = 1
"""The ``Retry-After`` of a 429: a key's slot frees as soon as one of its requests ends,
and a request takes well under a second (the server's p95 goal is 250 ms), so the
smallest whole number of seconds the header can say is the honest one."""


@dataclass
class Limiter:
    """At most ``per_key`` requests of one key in flight at once; past that, 429 with
    ``Retry-After``."""

    per_key: int
    _running: dict[str, int] = field(default_factory=dict)

    def enter(self, key_id: str) -> None:
        running = self._running.get(key_id, 0)
        if running >= self.per_key:
            raise HttpError(
                429,
                "busy",
                "too many requests of this key at once",
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
                limit=self.per_key,
                retry_after_seconds=RETRY_AFTER_SECONDS,
            )
        self._running[key_id] = running + 1

    def leave(self, key_id: str) -> None:
        left = self._running.get(key_id, 1) - 1
        if left:
            self._running[key_id] = left
        else:
            self._running.pop(key_id, None)
