"""The store's schema: applied migrations, the vector index, the status of both."""

from __future__ import annotations

from datetime import datetime

from sonality.models.common import Frozen

__all__ = ["AppliedMigration", "SchemaStatus", "VectorIndexStatus"]


class AppliedMigration(Frozen):
    version: int
    description: str
    checksum: str
    applied_at: datetime


class VectorIndexStatus(Frozen):
    """Neo4j's episode vector index: what the setting asks for, what the server has."""

    wanted: bool
    """``SONALITY_NEO4J_VECTOR_INDEX`` asks for it on this server (``auto``: on 2026.x)."""
    setting: str = "auto"
    """The setting itself: ``auto``, ``on`` or ``off``."""
    state: str | None = None
    """The server's state of the index (``ONLINE``, ``POPULATING``…); None: none exists."""
    scoped: bool = False
    """It filters by persona and user inside the index (Neo4j 2026.x)."""
    dimensions: int | None = None

    @property
    def matches(self) -> bool:
        """The server has the index exactly when the setting asks for it."""
        return self.wanted == (self.state is not None)


class SchemaStatus(Frozen):
    backend: str
    applied: tuple[AppliedMigration, ...]
    pending: tuple[str, ...]
    """Names of migration steps not yet applied, in order."""
    vector_index: VectorIndexStatus | None = None
    """Neo4j only (``sonality migrate`` makes it match the setting)."""

    @property
    def current(self) -> bool:
        return not self.pending
