"""Settings, read from the environment (prefix ``SONALITY_``) at entry points only.

Library code never reads the environment: it takes explicit objects. ``Settings()`` is
built by the CLI, the worker and ``Sonality.from_settings``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import click
from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["Settings", "default_store_url", "legacy_store_path"]


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

    model_config = SettingsConfigDict(env_prefix="SONALITY_", extra="ignore", frozen=True)

    store: str = Field(default_factory=default_store_url)
    """``sqlite:///path/to/file.db`` (embedded default) or ``bolt://``/``neo4j://`` URL."""
    neo4j_user: str = "neo4j"
    neo4j_password: SecretStr = SecretStr("")
    neo4j_database: str = "neo4j"

    model: str | None = None
    """litellm model name, e.g. ``openai/gpt-4o-mini``; unset means no LLM (degraded mode)."""
    llm_api_base: str | None = None
    llm_api_key: SecretStr | None = None
    llm_timeout: float = 60.0
    llm_max_retries: int = 3
    embedding_model: str | None = None
    """litellm embedding model; unset means the built-in offline hashed embedder."""
    embedding_dimensions: int = Field(default=256, ge=8, le=4096)

    log_format: Literal["auto", "json", "console"] = "auto"
    log_level: str = "INFO"

    max_message_chars: int = Field(default=20_000, ge=1)
    max_response_chars: int = Field(default=20_000, ge=1)
    context_token_budget: int = Field(default=2_000, ge=200)
    context_episodes: int = Field(default=5, ge=0)
    enrichment_max_attempts: int = Field(default=5, ge=1)

    cooling_period: int = Field(default=3, ge=0)
    max_commit_delta: float = Field(default=0.25, gt=0, le=2)
    disagreement_window: int = Field(default=50, ge=1)

    reflection_every: int = Field(default=20, ge=2)
    event_shift_threshold: float = Field(default=0.1, ge=0)
    snapshot_min_chars: int = Field(default=30, ge=1)
    snapshot_min_retention: float = Field(default=0.6, gt=0, le=1)
    snapshot_max_growth: float = Field(default=3.0, ge=1)
    snapshot_max_chars: int = Field(default=8_000, ge=100)
    snapshot_retention: int = Field(default=0, ge=0)
    """How many snapshot versions to keep; 0 keeps all."""
    lease_seconds: float = Field(default=300.0, gt=0)

    worker_scan_seconds: float = Field(default=30.0, gt=0)
    worker_retry_seconds: float = Field(default=60.0, gt=0)
    worker_idle_reflection_seconds: float | None = None

    @field_validator("store")
    @classmethod
    def _known_scheme(cls, value: str) -> str:
        schemes = ("sqlite:///", "bolt://", "bolt+s://", "neo4j://", "neo4j+s://", "neo4j+ssc://")
        if not value.startswith(schemes):
            raise ValueError(
                f"SONALITY_STORE must start with one of {', '.join(schemes)}; got {value!r}"
            )
        return value

    @property
    def store_backend(self) -> Literal["sqlite", "neo4j"]:
        return "sqlite" if self.store.startswith("sqlite:///") else "neo4j"

    @property
    def sqlite_path(self) -> Path:
        return Path(self.store.removeprefix("sqlite:///")).expanduser()
