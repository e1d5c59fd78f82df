"""Settings, read from the environment (prefix ``SONALITY_``) at entry points only.

Library code never reads the environment: it takes explicit objects. ``Settings()`` is
built by the CLI, the worker and ``Sonality.from_settings``.

Every numeric setting has bounds, so a value such as ``SONALITY_LLM_TIMEOUT=0`` is a
configuration error naming the variable (exit 3), never a failure later. Errors never
echo the value given (it may be a secret); a store URL is only ever shown with its
credentials masked (:func:`redact_url`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import click
from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = [
    "LOG_LEVELS",
    "STORE_SCHEMES",
    "Settings",
    "default_store_url",
    "legacy_store_path",
    "redact_url",
]

STORE_SCHEMES = (
    *("sqlite:///", "bolt://", "bolt+s://", "bolt+ssc://"),
    *("neo4j://", "neo4j+s://", "neo4j+ssc://"),
)
"""How ``SONALITY_STORE`` may start."""

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

_USERINFO = re.compile(r"(?<=://)[^/@\s]*@")


def redact_url(url: str) -> str:
    """``url`` with any ``user:password@`` part masked (``bolt://***@host:7687``)."""
    return _USERINFO.sub("***@", url)


def default_store_url() -> str:
    """``sqlite:///`` URL of the embedded default store in the user's data directory
    (``platformdirs``: ``~/.local/share/sonality`` on Linux, ``~/Library/Application
    Support/sonality`` on macOS, ``%LOCALAPPDATA%\\sonality`` on Windows)."""
    from platformdirs import user_data_dir

    return "sqlite:///" + str(Path(user_data_dir("sonality", appauthor=False)) / "sonality.db")


def legacy_store_path() -> Path:
    """Where versions up to 0.1 kept the default store (click's config directory,
    ``~/.config/sonality`` on Linux); ``wiring.open_store`` moves it to the new place."""
    return Path(click.get_app_dir("sonality")) / "sonality.db"


class Settings(BaseSettings):
    """Every knob, with its environment variable ``SONALITY_<NAME>``."""

    model_config = SettingsConfigDict(
        env_prefix="SONALITY_", extra="ignore", frozen=True, hide_input_in_errors=True
    )

    store: str = Field(default_factory=default_store_url)
    """``sqlite:///path/to/file.db`` (embedded default) or ``bolt://``/``neo4j://`` URL."""
    neo4j_user: str = Field(default="neo4j", min_length=1, max_length=256)
    neo4j_password: SecretStr = SecretStr("")
    neo4j_database: str = Field(default="neo4j", pattern=r"^[A-Za-z][A-Za-z0-9.-]{0,62}$")
    neo4j_retry_seconds: float = Field(default=5.0, gt=0, le=300)
    """How long the Neo4j driver retries a unit of work through transient failures (a
    restart, a leader switch) before the call fails with ``StoreUnavailable`` (the
    driver's ``max_transaction_retry_time``; its own default is 30 s)."""
    neo4j_connect_seconds: float = Field(default=5.0, gt=0, le=300)
    """How long opening a connection, or waiting for one from the pool, may take."""
    neo4j_vector_index: Literal["auto", "on", "off"] = "auto"
    """The ``episode_embedding`` vector index: ``auto`` keeps it where similarity is
    searched inside it (Neo4j 2026.x, filtered by persona and user) and not on 5.26, whose
    similarity runs in the per-process cache; ``on`` keeps it on 5.26 too, ``off``
    nowhere (2026.x then uses the cache). ``sonality migrate`` creates or drops it to
    match; see the README's performance section. ``true``/``false`` mean on/off."""
    cache_mb: int = Field(default=256, ge=1, le=1_000_000)
    """Memory the per-process similarity cache may hold (least recently used users go
    first); a user larger than it is searched in the database instead."""

    model: str | None = None
    """litellm model name, e.g. ``openai/gpt-4o-mini``; unset means no LLM (degraded mode)."""
    llm_api_base: str | None = None
    llm_api_key: SecretStr | None = None
    llm_timeout: float = Field(default=60.0, gt=0, le=3600)
    llm_max_retries: int = Field(default=3, ge=0, le=20)
    llm_transport: Literal["auto", "direct", "litellm"] = "auto"
    """How model calls are sent: ``auto`` sends to an OpenAI-compatible endpoint
    (``openai/<name>`` with ``SONALITY_LLM_API_BASE``) over a lean pooled HTTP client and
    everything else through litellm; ``litellm`` always through litellm."""
    model_concurrency: int = Field(default=64, ge=1, le=10_000)
    """Model calls one process has in flight at most, across personas, the Talker, the
    Thinker, enrichment and reflection; an eighth is kept for the Talker, which always
    goes first."""
    llm_requests_per_minute: float | None = Field(default=None, gt=0, le=1_000_000)
    """Calls started per minute per model at most (unset: no pacing). A 429 with
    ``Retry-After`` pauses every call to that model for that long, either way."""
    enrich_concurrency: int = Field(default=16, ge=1, le=1_000)
    """Episodes of one persona asked about at once (two calls each) while the commits
    stay in order."""
    shutdown_seconds: float = Field(default=10.0, ge=0, le=3_600)
    """How long closing (SIGTERM) lets the model calls in flight finish; what is left
    stays pending for the next process or the worker."""
    embedding_model: str | None = None
    """litellm embedding model; unset means the built-in offline hashed embedder."""
    embedding_dimensions: int = Field(default=256, ge=8, le=4096)

    log_format: Literal["auto", "json", "console"] = "auto"
    log_level: str = "INFO"

    max_message_chars: int = Field(default=20_000, ge=1, le=10_000_000)
    max_response_chars: int = Field(default=20_000, ge=1, le=10_000_000)
    context_token_budget: int = Field(default=2_000, ge=200, le=1_000_000)
    context_episodes: int = Field(default=5, ge=0, le=100)
    context_fact_tokens: int = Field(default=1_000, ge=50, le=1_000_000)
    """Tokens for the user's preferences and neutral facts in ``context`` (every
    constraint is there whatever this says); those beyond it are counted in the block,
    never dropped silently."""
    enrichment_max_attempts: int = Field(default=5, ge=1, le=100)
    enrichment_retry_rounds: int = Field(default=3, ge=0, le=100)
    """Rounds of automatic retries the worker gives a failed episode or insight part."""
    record_enrich: Literal["inline", "background", "off"] = "inline"
    """When ``record`` enriches: inline (bounded by ``record_deadline_seconds``),
    background (the persona's lane, right after the durable write) or off."""
    record_deadline_seconds: float = Field(default=10.0, gt=0, le=3_600)
    """The longest an inline ``record`` waits for enrichment before returning ``pending``."""
    respond_deadline_seconds: float = Field(default=30.0, gt=0, le=3_600)
    """The longest ``respond`` (and chat) waits for the persona's answer: past it the user's
    message is stored pending and the call fails (HTTP 504 with ``Retry-After``)."""
    lag_degraded_seconds: float = Field(default=60.0, gt=0, le=31_536_000)
    """Past this age of a persona's oldest pending episode or unthought Thinker turn, the
    server's ``/readyz`` says ``degraded`` and ``sonality doctor`` marks the persona behind."""

    cooling_period: int = Field(default=3, ge=0, le=1_000)
    max_commit_delta: float = Field(default=0.25, gt=0, le=2)
    disagreement_window: int = Field(default=50, ge=1, le=10_000)
    influence_window: int = Field(default=20, ge=1, le=10_000)
    """Interactions over which a user's influence budget and a topic's move cap count."""
    user_influence_budget: float = Field(default=0.1, gt=0, le=2)
    """Largest total |delta| one user's evidence may stage on one topic per window."""
    max_window_delta: float = Field(default=0.5, gt=0, le=2)
    """Largest net move of one topic over any window of ``influence_window`` interactions."""
    repeat_similarity: float = Field(default=0.9, gt=0, le=1)
    """Similarity from which a user's message repeats an earlier claim on the topic."""

    reflection_every: int = Field(default=20, ge=2, le=100_000)
    event_shift_threshold: float = Field(default=0.1, ge=0, le=100)
    snapshot_min_chars: int = Field(default=30, ge=1, le=1_000_000)
    snapshot_min_retention: float = Field(default=0.6, gt=0, le=1)
    snapshot_max_growth: float = Field(default=3.0, ge=1, le=1_000)
    snapshot_max_chars: int = Field(default=8_000, ge=100, le=1_000_000)
    snapshot_retention: int = Field(default=0, ge=0, le=1_000_000)
    """How many snapshot versions to keep; 0 keeps all."""
    lease_seconds: float = Field(default=300.0, gt=0, le=86_400)
    decay_review: bool = True
    """Let the model judge stale beliefs RETAIN / DECAY / FORGET at each reflection (one
    call, only when some belief is stale); advice only ever lowers or retires."""

    worker_scan_seconds: float = Field(default=30.0, gt=0, le=86_400)
    worker_retry_seconds: float = Field(default=60.0, gt=0, le=86_400)
    worker_idle_reflection_seconds: float | None = Field(default=None, gt=0, le=31_536_000)

    @field_validator("store")
    @classmethod
    def _known_scheme(cls, value: str) -> str:
        if not value.startswith(STORE_SCHEMES):
            raise ValueError(
                f"SONALITY_STORE must start with one of {', '.join(STORE_SCHEMES)}; "
                f"got {redact_url(value)!r}"
            )
        return value

    @field_validator("neo4j_vector_index", mode="before")
    @classmethod
    def _vector_index_bool(cls, value: object) -> object:
        """``true``/``false`` (the setting was a boolean) mean ``on``/``off``."""
        text = str(value).strip().lower()
        if isinstance(value, bool) or text in {"true", "false", "1", "0", "yes", "no"}:
            return "on" if text in {"true", "1", "yes"} else "off"
        return text

    @field_validator("log_level")
    @classmethod
    def _known_level(cls, value: str) -> str:
        if value.upper() not in LOG_LEVELS:
            raise ValueError(f"SONALITY_LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}")
        return value.upper()

    @field_validator("model", "llm_api_base", "embedding_model", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("llm_api_base")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://[^/\s]+", value):
            raise ValueError(
                "SONALITY_LLM_API_BASE must be an http:// or https:// URL "
                f"(got {redact_url(value)!r})"
            )
        return value

    @property
    def store_backend(self) -> Literal["sqlite", "neo4j"]:
        return "sqlite" if self.store.startswith("sqlite:///") else "neo4j"

    @property
    def sqlite_path(self) -> Path:
        return Path(self.store.removeprefix("sqlite:///")).expanduser()
