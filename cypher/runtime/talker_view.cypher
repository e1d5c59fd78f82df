// What the Talker reads about its conversation besides the context, in one round trip
// (it runs on every reply): the newest $limit episodes (newest first, episode/list_conversation
// below the $before cursor with $opt's filters) and the first one, both through the
// (persona_id, conversation_id, seq) index and stopped at their limit; the persona's affect
// towards the user; the conversation's Thinker counters with its current narrative (state
// is null before the first Thinker turn); the newest monologue entry (the Talker shows no
// older one). Times come as microseconds since the epoch (<name>_us): the driver builds
// each DateTime in Python, slower than the rest of an entry together.
CALL () {
  CALL () {
    INCLUDE episode/list_conversation
  }
  RETURN collect(episode) AS newest
}
CALL () {
  MATCH (e:Episode)
  USING INDEX SEEK e:Episode(persona_id, conversation_id, seq)
  WHERE e.persona_id = $persona_id
    AND e.conversation_id = $conversation_id
    AND e.seq IS NOT NULL
  WITH e
  ORDER BY e.persona_id, e.conversation_id, e.seq
  LIMIT 1
  RETURN collect(e {.*, embedding: null, created_at: null, thinker_created_at: null,
                    thinker_updated_at: null,
                    created_at_us: e.created_at.epochMillis * 1000
                                   + e.created_at.microsecond % 1000}) AS first
}
CALL () {
  OPTIONAL MATCH (a:AffectState {persona_id: $persona_id, user_id: $user_id})
  RETURN a {.*} AS affect
}
CALL () {
  OPTIONAL MATCH (c:Conversation {persona_id: $persona_id, id: $conversation_id})
  OPTIONAL MATCH (c)-[:NARRATIVE]->(n:Narrative)
    WHERE n.version = c.narrative_version
  RETURN CASE WHEN c IS NULL THEN null
         ELSE {thought_turn: coalesce(c.thought_turn, 0),
               narrative: n {.*, created_at: null, created_at_us: n.created_at.epochMillis * 1000 + n.created_at.microsecond % 1000}} END AS state
}
CALL () {
  MATCH (m:MonologueEntry {persona_id: $persona_id, conversation_id: $conversation_id})
  WITH m
  ORDER BY m.turn DESC
  LIMIT 1
  RETURN collect(m {.*, created_at: null, created_at_us: m.created_at.epochMillis * 1000 + m.created_at.microsecond % 1000}) AS monologue
}
RETURN newest, first, affect, state, monologue
