// What context reads in one statement, besides the similar episodes themselves: the
// persona, its CURRENT snapshot, the user's active facts (oldest first), the active beliefs (by topic)
// and the user's $recent latest episodes (through the (persona_id, user_id, seq) index,
// named by a hint: the planner's statistics could otherwise pick the (persona_id, user_id,
// embedding_rev) index and sort the user's history); their created_at comes as
// microseconds since the epoch (created_at_us), which the driver reads faster than a DateTime.
// No row: no such persona.
MATCH (p:Persona {id: $persona_id})
OPTIONAL MATCH (p)-[:CURRENT]->(s:Snapshot)
CALL () {
  OPTIONAL MATCH (f:UserFact {persona_id: $persona_id, user_id: $user_id})
  WHERE NOT f.retracted
  WITH f
  ORDER BY f.created_at, f.id
  RETURN collect(f {.*}) AS facts
}
CALL () {
  OPTIONAL MATCH (b:Belief {persona_id: $persona_id})
  WHERE b.status = 'active'
  WITH b
  ORDER BY b.topic
  RETURN collect(b {.*}) AS beliefs
}
CALL () {
  OPTIONAL MATCH (e:Episode)
  USING INDEX e:Episode(persona_id, user_id, seq)
  WHERE e.persona_id = $persona_id AND e.user_id = $user_id AND e.seq IS NOT NULL
  WITH e
  ORDER BY e.persona_id DESC, e.user_id DESC, e.seq DESC
  LIMIT $recent
  RETURN collect(e {.*, embedding: null, created_at: null,
                    created_at_us: e.created_at.epochMillis * 1000 + e.created_at.microsecond % 1000})
         AS recent
}
// The similarity cache's catch-up (sonality/storage/neo4j/vectors.py; the subqueries of
// episode/vectors, kept in step with it), when $since is not null: the user's embedded
// episodes stamped after $since that the cache does not hold at that stamp ($known), how
// many embedded episodes the user has, and the server's clock in the unit of the stamps.
CALL () {
  WITH 1 AS asked
  WHERE $since IS NOT NULL
  MATCH (e:Episode)
  USING INDEX e:Episode(persona_id, user_id, embedding_rev)
  WHERE e.persona_id = $persona_id AND e.user_id = $user_id AND e.embedding_rev IS NOT NULL
  RETURN count(e) AS embedded
}
CALL () {
  MATCH (e:Episode)
  USING INDEX e:Episode(persona_id, user_id, embedding_rev)
  WHERE e.persona_id = $persona_id AND e.user_id = $user_id AND e.embedding_rev > $since
    AND coalesce($known[e.id] <> e.embedding_rev, true)
  RETURN collect({id: e.id, rev: e.embedding_rev, seq: e.seq, embedding: e.embedding}) AS rows
}
WITH p, s, facts, beliefs, recent, embedded, rows, datetime.realtime() AS now
RETURN p {.*} AS persona, s {.*} AS snapshot, facts, beliefs, recent,
       embedded, rows, (now.epochSeconds * 1000000 + now.microsecond) * 1000 AS now
