"""The whole store: every aggregate's port, plus lifecycle."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from sonality.ports.archive import ArchiveStore
from sonality.ports.biography import BiographyStore
from sonality.ports.context import ContextStore
from sonality.ports.enrichment import EnrichmentStore
from sonality.ports.episode import EpisodeStore
from sonality.ports.erasure import ErasureStore
from sonality.ports.keys import KeyStore
from sonality.ports.persona import PersonaStore
from sonality.ports.reflection import ReflectionStore
from sonality.ports.runtime import RuntimeStore
from sonality.ports.schema import SchemaStore

__all__ = ["Store"]


@runtime_checkable
class Store(
    SchemaStore,
    PersonaStore,
    EpisodeStore,
    EnrichmentStore,
    ReflectionStore,
    RuntimeStore,
    KeyStore,
    ErasureStore,
    ArchiveStore,
    ContextStore,
    BiographyStore,
    Protocol,
):
    """Persistence of one Sonality deployment: every part above. Every method is scoped
    by persona (and by user where the data is a user's); every write is one transaction.
    A consumer that needs one aggregate depends on its part alone."""
