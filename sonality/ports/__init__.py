"""The ports: what the mind needs from the outside world, as structural Protocols.

Adapters (``storage.neo4j.store.Neo4jStore``, ``storage.sqlite.store.SqliteStore``,
``llm.litellm_llm.LiteLLM``, ``testing.ScriptedLLM`` …) satisfy them without inheriting.
"""

from sonality.ports.archive import ArchiveStore
from sonality.ports.biography import BiographyStore
from sonality.ports.clock import Clock
from sonality.ports.context import ContextStore
from sonality.ports.enrichment import EnrichmentStore
from sonality.ports.episode import EpisodeStore
from sonality.ports.erasure import ErasureStore
from sonality.ports.keys import KeyStore
from sonality.ports.model import LLM, Embedder, PromptSource, StreamingLLM, UsageSink
from sonality.ports.persona import PersonaStore
from sonality.ports.reflection import ReflectionStore
from sonality.ports.runtime import RuntimeStore
from sonality.ports.schema import SchemaStore
from sonality.ports.store import Store

__all__ = [
    "LLM",
    "ArchiveStore",
    "BiographyStore",
    "Clock",
    "ContextStore",
    "Embedder",
    "EnrichmentStore",
    "EpisodeStore",
    "ErasureStore",
    "KeyStore",
    "PersonaStore",
    "PromptSource",
    "ReflectionStore",
    "RuntimeStore",
    "SchemaStore",
    "Store",
    "StreamingLLM",
    "UsageSink",
]
