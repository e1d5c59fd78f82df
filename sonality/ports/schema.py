"""The store's schema port: migrations and the vector index."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from sonality.models import (
    SchemaStatus,
)

__all__ = ["SchemaStore"]


@runtime_checkable
class SchemaStore(Protocol):
    """The store as a whole: its backend, connection, schema and maintenance."""

    backend: str

    async def close(self) -> None: ...
    async def ping(self) -> None:
        """Raise ``StoreUnavailable`` when the store cannot be reached."""
        ...

    async def schema_status(self) -> SchemaStatus: ...
    async def migrate(self) -> list[str]:
        """Apply pending schema steps in order; return the names applied (empty if none).
        Raises ``MigrationChecksumMismatch`` when an applied step was edited."""
        ...

    async def delete_all(self) -> None:
        """Remove all data of every persona (schema stays). For tests."""
        ...
