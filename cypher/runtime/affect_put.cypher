// Compare-and-swap the affect state of a persona towards a user, in one statement: the
// persona's write lock first, then the stored version (0: none yet) is read under it,
// and only when $affect.version is that + 1 is the state written (the user is created if
// it never talked yet). found_version comes back either way; the adapter raises
// ConflictError when it did not match. No row: no such persona.
MATCH (p:Persona {id: $persona_id})
SET p._lock = true
REMOVE p._lock
WITH p
OPTIONAL MATCH (old:AffectState {persona_id: $persona_id, user_id: $user_id})
WITH p, coalesce(old.version, 0) AS found_version
CALL (p, found_version) {
  WITH p, found_version
  WHERE $affect.version = found_version + 1
  MERGE (u:User {persona_id: $persona_id, id: $user_id})
    ON CREATE SET u.created_at = $at
  MERGE (p)-[:TALKS_WITH]->(u)
  MERGE (a:AffectState {persona_id: $persona_id, user_id: $user_id})
  MERGE (u)-[:AFFECT]->(a)
  SET a += $affect
  RETURN a {.*} AS affect
UNION
  WITH p, found_version
  WHERE $affect.version <> found_version + 1
  RETURN null AS affect
}
RETURN found_version, affect
