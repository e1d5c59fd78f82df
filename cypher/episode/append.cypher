// Store a raw exchange (enrichment pending) as the next turn of its conversation, in one
// statement. An id used before writes nothing and returns the stored episode
// (created = false); the adapter compares the exchanges. No row: no such persona.
// (A UNION, not OPTIONAL CALL: on 5.26 an OPTIONAL CALL whose writing subquery yields no
// row returns an empty node instead of null.)
//
// Locks: in the usual case only the Conversation, taken by a plain write before anything
// is read from it (last_turn and the previous episode cannot change under it after that);
// a conversation's first episode and a group chat's take more, in order (below). Not by
// the increment itself: measured on 5.26, 100 concurrent appends into one conversation
// whose first write is `SET c.last_turn = c.last_turn + 1`, followed by a relationship on
// c, fail with DeadlockDetected (~90 of 100); with the plain write first, none
// (tests/reliability/test_busy_conversation.py). The persona is read, never written, so
// writers of one persona in different conversations run in parallel.
//
// seq orders the persona's episodes for enrichment without a persona counter: the
// server's clock in microseconds times 1000 plus a random 0-999 (the clock may tick in
// milliseconds: two conversations appending in the same tick then still differ, but for
// one chance in a thousand per pair), raised above the previous turn's seq so that it
// grows along every conversation.
MATCH (p:Persona {id: $persona_id})
OPTIONAL MATCH (existing:Episode {persona_id: $persona_id, id: $episode.id})
CALL (p, existing) {
  WITH p, existing
  WHERE existing IS NOT NULL
  RETURN existing AS e, false AS created
UNION
  WITH p, existing
  WHERE existing IS NULL
  OPTIONAL MATCH (known:Conversation {persona_id: $persona_id, id: $conversation_id})
  CALL (p, known) {
    // the usual case: a conversation of this user exists, so do its user, TALKS_WITH and
    // HAD (every path that makes a Conversation makes them with it); no MERGE to check
    WITH known
    WHERE known IS NOT NULL AND known.user_id = $user_id
    RETURN known AS c
  UNION
    WITH p, known
    WHERE known IS NULL OR known.user_id <> $user_id
    // a new conversation, or a user posting into another user's (a group chat). When
    // the user joins — its first episode links it to the persona (TALKS_WITH), its first
    // in this conversation to the conversation (HAD) — the persona's lock comes first, as
    // in the enrichment commit (which locks the persona, then users, then conversations):
    // the relationships lock the user, so joining appends queue behind the persona's
    // enrichment and each other instead of deadlocking (tests/neo4j/test_enrichment_locks.py,
    // tests/reliability/test_busy_conversation.py). A new conversation needs it too:
    // without it, conversations opened at once beside the enrichment lane deadlocked
    // (tests/neo4j/test_enrichment_locks.py). A member's later appends lock only the
    // conversation, as above.
    OPTIONAL MATCH (known_user:User {persona_id: $persona_id, id: $user_id})
    WITH p, known_user IS NULL OR known IS NULL
            OR NOT EXISTS { (known_user)-[:HAD]->(known) } AS joins
    FOREACH (_ IN CASE WHEN joins THEN [1] ELSE [] END |
      SET p._lock = true
      REMOVE p._lock
    )
    WITH p
    MERGE (u:User {persona_id: $persona_id, id: $user_id})
      ON CREATE SET u.created_at = $episode.created_at
    MERGE (c:Conversation {persona_id: $persona_id, id: $conversation_id})
      ON CREATE SET c.user_id = $user_id, c.last_turn = 0, c.created_at = $episode.created_at
    SET c._lock = true
    REMOVE c._lock
    MERGE (p)-[:TALKS_WITH]->(u)
    MERGE (u)-[:HAD]->(c)
    RETURN c
  }
  SET c._lock = true
  REMOVE c._lock
  SET c.last_turn = c.last_turn + 1
  WITH c, c.last_episode_id AS previous_id, datetime.realtime() AS now
  OPTIONAL MATCH (previous:Episode {persona_id: $persona_id, id: previous_id})
  WITH c, previous,
       (now.epochSeconds * 1000000 + now.microsecond) * 1000 + toInteger(rand() * 1000) AS clock
  CREATE (e:Episode $episode)
  SET e.seq = CASE
        WHEN previous IS NOT NULL AND previous.seq >= clock THEN previous.seq + 1
        ELSE clock
      END,
      e.turn = c.last_turn,
      c.last_episode_id = e.id,
      // display-only: a short caption for Neo4j Browser
      e.excerpt = CASE WHEN size(e.user_message) > 30
        THEN left(e.user_message, 29) + '…' ELSE e.user_message END
  SET e.caption = replace(substring(toString(e.created_at), 5, 11), 'T', ' ') + ' ' + e.excerpt,
      // the similarity caches' revision stamp (see sonality/storage/neo4j/vectors.py)
      e.embedding_rev = CASE WHEN size($embedding) = 0 THEN null ELSE e.seq END
  CREATE (c)-[:HAS_EPISODE]->(e)
  FOREACH (prev IN CASE WHEN previous IS NULL THEN [] ELSE [previous] END |
    CREATE (prev)-[:NEXT]->(e)
  )
  WITH e
  CALL (e) {
    WITH e
    WHERE size($embedding) > 0
    CALL db.create.setNodeVectorProperty(e, 'embedding', $embedding)
  }
  RETURN e, true AS created
}
RETURN e {.*, embedding: null, created_at: null, thinker_created_at: null,
          thinker_updated_at: null, created_at_us: e.created_at.epochMillis * 1000 + e.created_at.microsecond % 1000} AS episode,
       created
