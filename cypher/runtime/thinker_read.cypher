// What the Thinker reads on every turn, in one statement (one round trip where it took four):
// the persona, the turn's episode, the conversation's Thinker state with its monologue
// history (runtime/mind's columns, null when the conversation has none) and up to
// $limit of its episodes before the turn's, newest first (episode/list_conversation's read
// below the episode's own seq: the monologue's excerpt). persona or episode null: unknown.
// Times come as microseconds since the epoch (<name>_us), as in the reads they replace.
OPTIONAL MATCH (p:Persona {id: $persona_id})
OPTIONAL MATCH (t:Episode {persona_id: $persona_id, id: $episode_id})
CALL (t) {
  MATCH (e:Episode)
  USING INDEX SEEK e:Episode(persona_id, conversation_id, seq)
  WHERE e.persona_id = $persona_id
    AND e.conversation_id = $conversation_id
    AND e.seq < t.seq
  WITH e
  ORDER BY e.persona_id DESC, e.conversation_id DESC, e.seq DESC
  LIMIT $limit
  RETURN collect(e {.*, embedding: null, created_at: null, thinker_created_at: null,
                    thinker_updated_at: null,
                    created_at_us: e.created_at.epochMillis * 1000
                                   + e.created_at.microsecond % 1000}) AS before
}
OPTIONAL CALL () {
  INCLUDE runtime/mind
}
RETURN p {.*} AS persona,
       t {.*, embedding: null, created_at: null, thinker_created_at: null,
          thinker_updated_at: null,
          created_at_us: t.created_at.epochMillis * 1000 + t.created_at.microsecond % 1000} AS episode,
       narrative_version, thought_turn, narrative, entries, before
