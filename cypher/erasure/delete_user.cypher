// Remove a user with its facts and its affect state.
MATCH (u:User {persona_id: $persona_id, id: $user_id})
CALL (u) {
  OPTIONAL MATCH (f:UserFact {persona_id: $persona_id, user_id: $user_id})
  DETACH DELETE f
}
CALL (u) {
  OPTIONAL MATCH (a:AffectState {persona_id: $persona_id, user_id: $user_id})
  DETACH DELETE a
}
DETACH DELETE u
RETURN count(*) AS deleted
