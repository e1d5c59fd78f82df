// One Thinker turn, in one statement. Locks first: the persona's when the commit carries an
// affect state ($opt.affect not null; persona before conversation, like appends), then the
// conversation's. Then the checks, read under the locks and returned for the adapter
// (storage.checks.thought_may_commit, next_version, episode_not_found): the turn's status,
// the conversation's counters, the stored affect version, whether the episode hangs off
// the conversation. Only when all hold ($ok below) does anything get written: the affect
// state (user created if new), the monologue entry and the entries the history bound
// drops, the new narrative version PREVIOUS to the one it replaces and the retention
// prune, the conversation's counters, the turn marked done by $commit_id and its usage
// ($rows). A refused commit whose turn is done by its own $commit_id is this commit, run
// again by the driver after a connection lost once the server had committed it: the
// adapter answers it as done (storage.checks.thought_landed). No row: the conversation has
// no Thinker state.
// (The parts that may be null travel in $opt: see sonality/storage/neo4j/cypher.py.)
OPTIONAL MATCH (p:Persona {id: $persona_id})
CALL (p) {
  WITH p
  WHERE p IS NOT NULL AND $opt.affect IS NOT NULL
  SET p._lock = true
  REMOVE p._lock
}
WITH p
MATCH (c:Conversation {persona_id: $persona_id, id: $conversation_id})
WHERE c.thought_turn IS NOT NULL
SET c._lock = true
REMOVE c._lock
WITH p, c
OPTIONAL MATCH (e:Episode {persona_id: $persona_id, id: $episode_id})
  WHERE e.thinker_status IS NOT NULL
OPTIONAL MATCH (a:AffectState {persona_id: $persona_id, user_id: $user_id})
WITH p, c, e, c.thought_turn AS thought_turn, c.narrative_version AS narrative_version,
     coalesce(a.version, 0) AS affect_version,
     e IS NOT NULL AND EXISTS { MATCH (c)-[:HAS_EPISODE]->(e) } AS linked
WITH p, c, e, thought_turn, narrative_version, affect_version, linked,
     e IS NOT NULL
     AND e.thinker_status IN ['pending', 'failed']
     AND thought_turn = $expected_thought_turn
     AND narrative_version = $expected_narrative_version
     AND ($opt.affect IS NULL OR (p IS NOT NULL AND affect_version = $opt.affect.version - 1))
     AND (($opt.entry IS NULL AND $opt.narrative IS NULL) OR linked) AS ok
CALL (p, ok) {
  WITH p, ok
  WHERE ok AND $opt.affect IS NOT NULL
  MERGE (u:User {persona_id: $persona_id, id: $user_id})
    ON CREATE SET u.created_at = $at
  MERGE (p)-[:TALKS_WITH]->(u)
  MERGE (a:AffectState {persona_id: $persona_id, user_id: $user_id})
  MERGE (u)-[:AFFECT]->(a)
  SET a += $opt.affect
}
CALL (c, e, ok) {
  WITH c, e, ok
  WHERE ok AND $opt.entry IS NOT NULL
  CREATE (m:MonologueEntry)
  SET m = $opt.entry
  CREATE (c)-[:THOUGHT]->(m)
  CREATE (m)-[:ABOUT]->(e)
}
CALL (ok) {
  WITH ok
  WHERE ok AND size($drop_turns) > 0
  MATCH (m:MonologueEntry {persona_id: $persona_id, conversation_id: $conversation_id})
  WHERE m.turn IN $drop_turns
  DETACH DELETE m
}
CALL (c, e, ok) {
  WITH c, e, ok
  WHERE ok AND $opt.narrative IS NOT NULL
  OPTIONAL MATCH (c)-[:NARRATIVE]->(previous:Narrative)
    WHERE previous.version = c.narrative_version
  CREATE (n:Narrative)
  SET n = $opt.narrative
  CREATE (c)-[:NARRATIVE]->(n)
  CREATE (n)-[:AFTER]->(e)
  FOREACH (x IN CASE WHEN previous IS NULL THEN [] ELSE [previous] END |
    CREATE (n)-[:PREVIOUS]->(x)
  )
  WITH n
  MATCH (old:Narrative {persona_id: $persona_id, conversation_id: $conversation_id})
  WHERE old.version <= $prune_below
  DETACH DELETE old
}
CALL (c, e, ok) {
  WITH c, e, ok
  WHERE ok
  SET c.narrative_version = $narrative_version,
      c.thought_turn = $turn,
      c.mind_updated_at = $at,
      e.thinker_status = 'done',
      e.thinker_error = null,
      e.thinker_updated_at = $at,
      e.thinker_commit_id = $commit_id
}
// the turn's usage by the Thinker's calls ($rows, runtime/add_usage's rows), added only with
// the thought (a refused thought's usage is booked on its own by the caller)
CALL (ok) {
  WITH ok
  WHERE ok
  CALL () {
    INCLUDE runtime/add_usage
  }
  RETURN written
UNION
  WITH ok
  WHERE NOT ok
  RETURN 0 AS written
}
RETURN ok, e IS NOT NULL AS turn_found, e.thinker_status AS status,
       e.thinker_commit_id AS commit_id, thought_turn, narrative_version, affect_version,
       p IS NOT NULL AS persona_found, linked, written
