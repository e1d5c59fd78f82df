"""The Cypher Sonality runs, by name.

Every query lives in ``cypher/<area>/<name>.cypher`` (one statement per file, parameters
only) and is addressed by a :class:`Query` member whose value is that path without the
suffix. ``tests/neo4j/test_cypher_files.py`` keeps the enum and the files in step.

This module reads text only; it never imports the driver, so the query catalogue can be
checked without a server.

**Type-stable parameters.** Neo4j 5 keys its plan cache on the statement's text and the
type of each parameter passed (used or not), so a statement run with a parameter null
once and an integer once is parsed, planned and compiled twice. The types that make
separate entries, measured on 5.26 by counting what ``db.clearQueryCaches()`` clears:
null (and float: one entry), integer, string, boolean, map, a list of strings, and any
other list (empty, of floats, of maps: one entry). A map's type does not depend on what
it holds. Hence two rules for every statement a hot path runs:

* values that may be null, and lists of strings that may be empty, travel in one map
  parameter ``$opt`` (``$opt.since IS NULL``, ``UNWIND $opt.ids``), null keeping its
  meaning there;
* an embedding that may be absent is an empty list (``size($embedding) = 0``): a list of
  floats and an empty list are one type.

``tests/neo4j/test_plan_cache_shapes.py`` checks that the hot operations keep one entry
per statement.
"""

from __future__ import annotations

import re
from enum import StrEnum
from functools import cache
from typing import LiteralString

from sonality.resources import resource_dir

__all__ = ["Query", "load", "split_statements"]


class Query(StrEnum):
    """Names of the Cypher files under ``cypher/``."""

    # admin: connectivity and wiping
    ADMIN_DELETE_ALL = "admin/delete_all"
    ADMIN_PING = "admin/ping"

    # schema: the migration runner's own bookkeeping
    SCHEMA_APPLIED_MIGRATIONS = "schema/applied_migrations"
    SCHEMA_AWAIT_INDEXES = "schema/await_indexes"
    SCHEMA_RECORD_MIGRATION = "schema/record_migration"
    SCHEMA_VECTOR_INDEX = "schema/vector_index"
    SCHEMA_VECTOR_INDEX_CREATE = "schema/vector_index_create"
    SCHEMA_VECTOR_INDEX_CREATE_SCOPED = "schema/vector_index_create_scoped"
    SCHEMA_VECTOR_INDEX_DROP = "schema/vector_index_drop"

    # personas
    PERSONA_CREATE = "persona/create"
    PERSONA_GET = "persona/get"
    PERSONA_LIST = "persona/list"
    PERSONA_LOCK = "persona/lock"

    # biography: the persona's own past (seed 002)
    BIOGRAPHY_LIST = "biography/list"
    BIOGRAPHY_PUT = "biography/put"
    BIOGRAPHY_REMOVE = "biography/remove"

    # snapshots
    SNAPSHOT_APPEND = "snapshot/append"
    SNAPSHOT_CURRENT = "snapshot/current"
    SNAPSHOT_HISTORY = "snapshot/history"

    # context: what one context call reads (and the parts its two forms include)
    CONTEXT_BELIEFS_ROUTE = "context/beliefs_route"
    CONTEXT_BELIEFS_SEARCH = "context/beliefs_search"
    CONTEXT_BELIEFS_STRONGEST = "context/beliefs_strongest"
    CONTEXT_BELIEFS_UNEMBEDDED = "context/beliefs_unembedded"
    CONTEXT_FACTS = "context/facts"
    CONTEXT_HEAVY_CONSTRAINTS = "context/heavy_constraints"
    CONTEXT_READ = "context/read"
    CONTEXT_READ_SEARCH = "context/read_search"
    CONTEXT_RECENT = "context/recent"

    # episodes
    EPISODE_ANSWER = "episode/answer"
    EPISODE_APPEND = "episode/append"
    EPISODE_APPEND_BACKLOG = "episode/append_backlog"
    EPISODE_APPEND_BATCH = "episode/append_batch"
    EPISODE_BY_IDS = "episode/by_ids"
    EPISODE_COUNT_BY_STATUS = "episode/count_by_status"
    EPISODE_CHAIN = "episode/chain"
    EPISODE_GET = "episode/get"
    EPISODE_LIST = "episode/list"
    EPISODE_LIST_CONVERSATION = "episode/list_conversation"
    EPISODE_LIST_USER = "episode/list_user"
    EPISODE_LIST_FAILED = "episode/list_failed"
    EPISODE_LIST_PENDING = "episode/list_pending"
    EPISODE_LIST_UNEMBEDDED = "episode/list_unembedded"
    EPISODE_COUNT_UNEMBEDDED = "episode/count_unembedded"
    EPISODE_MARK_ATTEMPT = "episode/mark_attempt"
    EPISODE_OLDEST_PENDING = "episode/oldest_pending"
    EPISODE_RECENT_EXCHANGES = "episode/recent_exchanges"
    EPISODE_REQUEUE_FAILED = "episode/requeue_failed"
    EPISODE_SET_EMBEDDING = "episode/set_embedding"
    EPISODE_SIMILAR = "episode/similar"
    EPISODE_SIMILAR_EXACT = "episode/similar_exact"
    EPISODE_SIMILAR_SEARCH = "episode/similar_search"
    EPISODE_VECTORS = "episode/vectors"

    # enrichment commit (one statement)
    ENRICHMENT_BACKLOG = "enrichment/backlog"
    ENRICHMENT_BELIEFS = "enrichment/beliefs"
    ENRICHMENT_COMMIT = "enrichment/commit"
    ENRICHMENT_CREATE_FACTS = "enrichment/create_facts"
    ENRICHMENT_CREATE_STAGED = "enrichment/create_staged"
    ENRICHMENT_STATE = "enrichment/state"

    # beliefs and their provenance
    BELIEF_CONTRADICTS = "belief/contradicts"
    BELIEF_EVIDENCE = "belief/evidence"
    BELIEF_LIST = "belief/list"
    BELIEF_SUPPORTS = "belief/supports"
    BELIEF_SET_TOPIC_EMBEDDINGS = "belief/set_topic_embeddings"
    BELIEF_UPSERT = "belief/upsert"

    # staged updates
    STAGED_INFLUENCE = "staged/influence"
    STAGED_LIST = "staged/list"

    # insights, and the retried insight part of enriched episodes
    INSIGHT_COMMIT = "insight/commit"
    INSIGHT_COUNT_RETRIES = "insight/count_retries"
    INSIGHT_LIST = "insight/list"
    INSIGHT_MARK_ATTEMPT = "insight/mark_attempt"
    INSIGHT_REQUEUE_FAILED = "insight/requeue_failed"
    INSIGHT_RETRIES = "insight/retries"
    INSIGHT_STATE = "insight/state"

    # API keys of the HTTP server
    KEY_CREATE = "key/create"
    KEY_GET = "key/get"
    KEY_LIST = "key/list"
    KEY_LIVE = "key/live"
    KEY_REVOKE = "key/revoke"
    KEY_UNGRANT = "key/ungrant"

    # user facts
    FACT_CORRECT = "fact/correct"
    FACT_GET = "fact/get"
    FACT_LIST = "fact/list"
    FACT_RETRACT = "fact/retract"

    # reflection: the lease, the one-transaction commit, attempts, reads
    REFLECTION_COMMIT = "reflection/commit"
    REFLECTION_EPISODES_SINCE = "reflection/episodes_since"
    REFLECTION_LEASE_GET = "reflection/lease_get"
    REFLECTION_LEASE_READ = "reflection/lease_read"
    REFLECTION_LEASE_RELEASE = "reflection/lease_release"
    REFLECTION_LEASE_SET = "reflection/lease_set"
    REFLECTION_LIST = "reflection/list"
    REFLECTION_RECORD = "reflection/record"
    REFLECTION_SHIFTS = "reflection/shifts"

    # dual-process runtime: persona defaults, Thinker turns, narratives, monologue, affect, usage
    RUNTIME_ADD_USAGE = "runtime/add_usage"
    RUNTIME_AFFECT_GET = "runtime/affect_get"
    RUNTIME_AFFECT_PUT = "runtime/affect_put"
    RUNTIME_APPEND_TURN = "runtime/append_turn"
    RUNTIME_BEGIN_TURN = "runtime/begin_turn"
    RUNTIME_COMMIT_THOUGHT = "runtime/commit_thought"
    RUNTIME_LOCK_CONVERSATION = "runtime/lock_conversation"
    RUNTIME_MARK_FAILED = "runtime/mark_failed"
    RUNTIME_MIND = "runtime/mind"
    RUNTIME_NARRATIVES = "runtime/narratives"
    RUNTIME_RETRIES = "runtime/retries"
    RUNTIME_SET_PERSONA = "runtime/set_persona"
    RUNTIME_TALKER_READ = "runtime/talker_read"
    RUNTIME_TALKER_VIEW = "runtime/talker_view"
    RUNTIME_THINKER_READ = "runtime/thinker_read"
    RUNTIME_TURN = "runtime/turn"
    RUNTIME_TURNS = "runtime/turns"
    RUNTIME_USAGE = "runtime/usage"

    # erasure: forgetting a user or an exchange, snapshot reverts, persona deletion
    ERASURE_AUDIT_KEY = "erasure/audit_key"
    ERASURE_CLEAR_REVIEW = "erasure/clear_review"
    ERASURE_CONVERSATIONS = "erasure/conversations"
    ERASURE_COUNTS = "erasure/counts"
    ERASURE_CREATE = "erasure/create"
    ERASURE_DELETE_BELIEFS = "erasure/delete_beliefs"
    ERASURE_DELETE_EPISODES = "erasure/delete_episodes"
    ERASURE_DELETE_PERSONA = "erasure/delete_persona"
    ERASURE_DELETE_PROVENANCE = "erasure/delete_provenance"
    ERASURE_DELETE_STAGED = "erasure/delete_staged"
    ERASURE_DELETE_USER = "erasure/delete_user"
    ERASURE_DROP_CONVERSATIONS = "erasure/drop_conversations"
    ERASURE_DROP_TOPICS = "erasure/drop_topics"
    ERASURE_EVIDENCE = "erasure/evidence"
    ERASURE_FACTS = "erasure/facts"
    ERASURE_FORGET_AFFECT = "erasure/forget_affect"
    ERASURE_LIST = "erasure/list"
    ERASURE_PURGE_SNAPSHOTS = "erasure/purge_snapshots"
    ERASURE_REFACT = "erasure/refact"
    ERASURE_REFLECTIONS = "erasure/reflections"
    ERASURE_REINDEX_EPISODES = "erasure/reindex_episodes"
    ERASURE_REINDEX_REFLECTIONS = "erasure/reindex_reflections"
    ERASURE_RELINK = "erasure/relink"
    ERASURE_RELINK_SNAPSHOTS = "erasure/relink_snapshots"
    ERASURE_REMOVE_SNAPSHOTS = "erasure/remove_snapshots"
    ERASURE_REVERT_SNAPSHOT = "erasure/revert_snapshot"
    ERASURE_REWIND_THINKER = "erasure/rewind_thinker"
    ERASURE_SNAPSHOTS = "erasure/snapshots"
    ERASURE_UPDATE_PERSONA = "erasure/update_persona"
    ERASURE_USER = "erasure/user"
    ERASURE_USER_EPISODES = "erasure/user_episodes"

    # data upgrades after the migrations (storage/neo4j/upgrade.py)
    UPGRADE_FLAGGED_PERSONAS = "upgrade/flagged_personas"
    UPGRADE_INCARNATIONS = "upgrade/incarnations"
    UPGRADE_KEY_FACTS = "upgrade/key_facts"
    UPGRADE_REKEY_SUBJECTS = "upgrade/rekey_subjects"
    UPGRADE_UNBOUND_KEYS = "upgrade/unbound_keys"
    UPGRADE_UNKEYED_FACT_USERS = "upgrade/unkeyed_fact_users"
    UPGRADE_UNKEYED_SUBJECTS = "upgrade/unkeyed_subjects"

    # archive: one persona read out and written back (export, import, copy)
    ARCHIVE_AFFECT = "archive/affect"
    ARCHIVE_CONVERSATIONS = "archive/conversations"
    ARCHIVE_EPISODES = "archive/episodes"
    ARCHIVE_FACTS = "archive/facts"
    ARCHIVE_LINK_EPISODES = "archive/link_episodes"
    ARCHIVE_LINK_NARRATIVES = "archive/link_narratives"
    ARCHIVE_MONOLOGUE = "archive/monologue"
    ARCHIVE_NARRATIVES = "archive/narratives"
    ARCHIVE_PERSONA = "archive/persona"
    ARCHIVE_PROVENANCE = "archive/provenance"
    ARCHIVE_PUT_AFFECT = "archive/put_affect"
    ARCHIVE_PUT_CONVERSATIONS = "archive/put_conversations"
    ARCHIVE_PUT_EPISODES = "archive/put_episodes"
    ARCHIVE_PUT_ERASURES = "archive/put_erasures"
    ARCHIVE_PUT_INSIGHTS = "archive/put_insights"
    ARCHIVE_PUT_MONOLOGUE = "archive/put_monologue"
    ARCHIVE_PUT_NARRATIVES = "archive/put_narratives"
    ARCHIVE_PUT_PERSONA = "archive/put_persona"
    ARCHIVE_PUT_REFLECTIONS = "archive/put_reflections"
    ARCHIVE_PUT_SNAPSHOTS = "archive/put_snapshots"
    ARCHIVE_PUT_THINKER = "archive/put_thinker"
    ARCHIVE_PUT_TOPICS = "archive/put_topics"
    ARCHIVE_PUT_USAGE = "archive/put_usage"
    ARCHIVE_PUT_USERS = "archive/put_users"
    ARCHIVE_REFLECTIONS = "archive/reflections"
    ARCHIVE_STAGED = "archive/staged"
    ARCHIVE_THINKER_TURNS = "archive/thinker_turns"
    ARCHIVE_TOPICS = "archive/topics"
    ARCHIVE_USAGE = "archive/usage"
    ARCHIVE_USERS = "archive/users"


_INCLUDE = re.compile(r"^[ \t]*INCLUDE ([a-z]+/[a-z0-9_]+)[ \t]*$", re.MULTILINE)
"""A line ``INCLUDE <area>/<name>``: the named query's text in its place (see load)."""

_CYPHER_25 = re.compile(r"\ACYPHER 25[ \t]*\n")
"""An included query's own ``CYPHER 25`` first line (the including statement carries it)."""


@cache
def load(query: Query) -> LiteralString:
    """The text of ``query``'s file (read once).

    A file may compose others: a line holding only ``INCLUDE <area>/<name>`` (not Cypher;
    always inside a ``CALL () { … }`` subquery) is replaced by that query's text, so one
    statement can do what two files do without repeating either (``episode/
    append_backlog`` runs ``episode/append`` then ``enrichment/backlog``). An included
    query's ``CYPHER 25`` first line is dropped: the including statement must carry it
    (``context/read_search``).

    The text is a file shipped with Sonality, never user input, which is why it may be
    treated as a literal string by the driver's typing (mypy reads ``LiteralString`` as
    ``str``, so no cast is needed)."""
    path = resource_dir("cypher") / f"{query.value}.cypher"
    text = path.read_text(encoding="utf-8").strip()
    return _INCLUDE.sub(lambda m: _CYPHER_25.sub("", load(Query(m.group(1))), count=1), text)


def split_statements(text: str) -> list[str]:
    """Split Cypher ``text`` at top-level ``;`` (outside strings, quoted names and
    comments). Statements holding only whitespace and comments are dropped; each returned
    statement is stripped and keeps its comments."""
    statements: list[str] = []
    start = 0
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        pair = text[i : i + 2]
        if pair == "//":
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
            continue
        if pair == "/*":
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        if ch in "'\"`":
            i = _skip_quoted(text, i)
            continue
        if ch == ";":
            statements.append(text[start:i])
            start = i + 1
        i += 1
    statements.append(text[start:])
    return [s.strip() for s in statements if _strip_comments(s).strip()]


def _skip_quoted(text: str, i: int) -> int:
    """Index just past the quoted string or name opening at ``text[i]``."""
    quote = text[i]
    i += 1
    while i < len(text):
        ch = text[i]
        if ch == "\\" and quote != "`":
            i += 2
            continue
        if ch == quote:
            if quote == "`" and text[i + 1 : i + 2] == "`":  # doubled backtick escapes itself
                i += 2
                continue
            return i + 1
        i += 1
    return i


def _strip_comments(text: str) -> str:
    """``text`` without its ``//`` and ``/* */`` comments (strings kept verbatim)."""
    out: list[str] = []
    i = 0
    n = len(text)
    while i < n:
        pair = text[i : i + 2]
        if pair == "//":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if pair == "/*":
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        if text[i] in "'\"`":
            j = _skip_quoted(text, i)
            out.append(text[i:j])
            i = j
            continue
        out.append(text[i])
        i += 1
    return "".join(out)
