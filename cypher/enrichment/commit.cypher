// Consecutive enriched interactions of one persona ($commits, in their order; a list of one
// for a single interaction), in one statement. First the persona's write lock; then, for
// each commit in turn, the checks against what the commits before it left: the persona is
// at the commit's expected_interaction_count, has not reflected since the plan read it
// (last_reflection_at, when expected_reflection_at is given: a reflection decays beliefs)
// and its episode is still pending. A commit whose checks fail writes nothing and its
// found_* columns say why (the adapter raises ConflictError, rolling back the commits
// before it too); otherwise its writes follow, and the counts of what each batch wrote come
// back so the adapter can refuse a commit that named unknown users, episodes or beliefs,
// with the episode as written (so nothing needs to read it back). One row per commit, by
// index; no row: no such persona.
MATCH (p:Persona {id: $persona_id})
SET p._lock = true
REMOVE p._lock
WITH p
// the users the chunk's facts hang on, locked next (in id order), before any episode: an
// append locks its user before the previous episode of its conversation, so taking them
// in the same order here keeps the two from deadlocking
CALL (p) {
  UNWIND $opt.fact_users AS user_id
  MATCH (u:User {persona_id: $persona_id, id: user_id})
  SET u._lock = true
  REMOVE u._lock
}
// then the conversations of the chunk's episodes (in id order), before any episode or
// relationship: an append's first lock is its conversation, after which it links the
// conversation's last episode (NEXT), which takes that episode and the relationship at
// the head of its chain — the same records the writes below take for the chunk's
// episodes, in the other order. Sharing the first lock, the two queue instead of
// deadlocking (tests/neo4j/test_enrichment_locks.py).
CALL (p) {
  UNWIND $commits AS c
  MATCH (e:Episode {persona_id: $persona_id, id: c.episode_id})
  USING INDEX SEEK e:Episode(persona_id, id)
  WITH DISTINCT e.conversation_id AS conversation_id
  ORDER BY conversation_id
  MATCH (conversation:Conversation {persona_id: $persona_id, id: conversation_id})
  SET conversation._lock = true
  REMOVE conversation._lock
}
UNWIND range(0, size($commits) - 1) AS index
CALL (p, index) {
  WITH p, $commits[index] AS c
  OPTIONAL MATCH (e:Episode {persona_id: $persona_id, id: c.episode_id})
  USING INDEX SEEK e:Episode(persona_id, id)
  WITH p, c, e, p.interaction_count AS found_count, e.enrichment_status AS found_status,
       coalesce(p.last_reflection_at, 0) AS found_reflection_at
  WITH p, c, e, found_count, found_status, found_reflection_at,
       found_count = c.expected_interaction_count AND found_status = 'pending'
         AND coalesce(c.expected_reflection_at = found_reflection_at, true) AS ok
  // the episode, the persona's counters and the insight
  CALL (p, e, ok, c) {
    WITH p, e, ok, c
    WHERE ok
    SET e += c.fields
    SET p.interaction_count = c.interaction_count,
        p.disagreement_window = c.disagreement_window,
        p.shift_since_reflection = p.shift_since_reflection + c.shift_total
    FOREACH (insight IN CASE WHEN c.insight IS NULL THEN [] ELSE [c.insight] END |
      CREATE (i:Insight)
      SET i = insight
      CREATE (e)-[:YIELDED]->(i)
    )
  }
  // (User)-[:HAS_FACT]->(UserFact)-[:FROM]->(Episode)
  CALL (ok, c) {
    WITH ok, c
    WHERE ok
    UNWIND c.facts AS fact
    MATCH (u:User {persona_id: $persona_id, id: fact.user_id})
    MATCH (source:Episode {persona_id: $persona_id, id: fact.episode_id})
    CREATE (f:UserFact)
    SET f = fact
    FOREACH (_ IN CASE WHEN fact.kind = 'constraint' THEN [1] ELSE [] END | SET f:Constraint)
    CREATE (u)-[:HAS_FACT]->(f)
    CREATE (f)-[:FROM]->(source)
    RETURN count(f) AS facts_written
  }
  // facts the user already had, disclosed again: one more exchange backs each
  CALL (ok, c) {
    WITH ok, c
    WHERE ok
    UNWIND c.merged_facts AS merged
    MATCH (:User {persona_id: $persona_id, id: merged.user_id})-[:HAS_FACT]->
          (f:UserFact {persona_id: $persona_id, id: merged.id})
    WHERE NOT coalesce(f.retracted, false)
    MATCH (source:Episode {persona_id: $persona_id, id: c.episode_id})
    SET f.severity = merged.severity, f.also_from = merged.also_from
    MERGE (f)-[:FROM]->(source)
    RETURN count(f) AS facts_merged
  }
  // (Episode)-[:STAGED]->(StagedUpdate) for the new deltas
  CALL (ok, c) {
    WITH ok, c
    WHERE ok
    UNWIND c.staged AS update
    MATCH (source:Episode {persona_id: $persona_id, id: update.episode_id})
    CREATE (s:StagedUpdate)
    SET s = update
    CREATE (source)-[:STAGED]->(s)
    RETURN count(s) AS staged_written
  }
  // the due deltas netted now (fewer than given: unknown or committed already)
  CALL (ok, c) {
    WITH ok, c
    WHERE ok
    UNWIND c.committed_staged_ids AS staged_id
    MATCH (s:StagedUpdate {persona_id: $persona_id, id: staged_id})
    WHERE s.committed_at IS NULL
    SET s.committed_at = c.interaction_count
    RETURN count(s) AS staged_committed
  }
  // beliefs by (persona_id, topic), linked (Persona)-[:HOLDS]->(Belief)-[:ABOUT]->(Topic),
  // with the display labels Neo4j Browser styles by
  CALL (p, ok, c) {
    WITH p, ok, c
    WHERE ok
    UNWIND c.beliefs AS belief
    MERGE (b:Belief {persona_id: $persona_id, topic: belief.topic})
      ON CREATE SET b.embed_pending = true
    SET b += belief
    SET b.caption = b.topic + ' ' + CASE WHEN b.position > 0 THEN '+' ELSE '' END
          + toString(round(b.position, 2))
    REMOVE b:Favoured:Opposed:Firm:Retired
    FOREACH (_ IN CASE WHEN b.position > 0 THEN [1] ELSE [] END | SET b:Favoured)
    FOREACH (_ IN CASE WHEN b.position < 0 THEN [1] ELSE [] END | SET b:Opposed)
    FOREACH (_ IN CASE WHEN b.confidence >= 0.5 THEN [1] ELSE [] END | SET b:Firm)
    FOREACH (_ IN CASE WHEN b.status = 'retired' THEN [1] ELSE [] END | SET b:Retired)
    MERGE (t:Topic {persona_id: $persona_id, name: belief.topic})
    MERGE (b)-[:ABOUT]->(t)
    MERGE (p)-[:HOLDS]->(b)
    RETURN count(b) AS beliefs_written
  }
  // (Episode)-[:MENTIONS]->(Topic)
  CALL (e, ok, c) {
    WITH e, ok, c
    WHERE ok
    UNWIND c.topics AS name
    MERGE (t:Topic {persona_id: $persona_id, name: name})
    MERGE (e)-[:MENTIONS]->(t)
    RETURN count(t) AS topics_linked
  }
  // provenance: (Episode)-[:SUPPORTS|CONTRADICTS {delta}]->(Belief), by the delta's sign
  CALL (ok, c) {
    WITH ok, c
    WHERE ok
    UNWIND c.edges AS edge
    MATCH (source:Episode {persona_id: $persona_id, id: edge.episode_id})
    MATCH (b:Belief {persona_id: $persona_id, topic: edge.topic})
    WITH source, b, edge,
         {
           delta: edge.delta,
           committed_at: edge.committed_at,
           caption: CASE WHEN edge.delta >= 0 THEN '+' ELSE '' END
             + toString(round(edge.delta, 3))
         } AS props
    FOREACH (_ IN CASE WHEN edge.delta >= 0 THEN [1] ELSE [] END |
      CREATE (source)-[r:SUPPORTS]->(b)
      SET r = props
    )
    FOREACH (_ IN CASE WHEN edge.delta < 0 THEN [1] ELSE [] END |
      CREATE (source)-[r:CONTRADICTS]->(b)
      SET r = props
    )
    RETURN count(*) AS edges_written
  }
  RETURN found_count, found_status, found_reflection_at, facts_written, facts_merged,
         staged_written,
         staged_committed, beliefs_written, edges_written,
         e {.*, embedding: null, created_at: null, thinker_created_at: null,
            thinker_updated_at: null, created_at_us: e.created_at.epochMillis * 1000 + e.created_at.microsecond % 1000} AS episode
}
RETURN index, found_count, found_status, found_reflection_at, facts_written, facts_merged,
       staged_written,
       staged_committed, beliefs_written, edges_written, episode
ORDER BY index
