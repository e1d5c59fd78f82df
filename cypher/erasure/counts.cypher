// How many facts (the user's, or those drawn from the episodes) and insights (drawn from
// the episodes) an erasure removes.
CALL () {
  MATCH (f:UserFact {persona_id: $persona_id})
  WHERE f.user_id = $user_id OR f.episode_id IN $ids
  RETURN count(f) AS facts
}
CALL () {
  MATCH (i:Insight {persona_id: $persona_id})
  WHERE i.episode_id IN $ids
  RETURN count(i) AS insights
}
RETURN facts, insights
