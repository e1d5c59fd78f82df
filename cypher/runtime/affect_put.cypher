// Write the affect state of a persona towards a user (the caller holds the persona lock
// and has checked the version); the user is created if it never talked yet.
MATCH (p:Persona {id: $persona_id})
MERGE (u:User {persona_id: $persona_id, id: $user_id})
  ON CREATE SET u.created_at = $at
MERGE (p)-[:TALKS_WITH]->(u)
MERGE (a:AffectState {persona_id: $persona_id, user_id: $user_id})
MERGE (u)-[:AFFECT]->(a)
SET a += $affect
RETURN a {.*} AS affect
