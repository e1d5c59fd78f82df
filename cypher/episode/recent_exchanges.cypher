// One user's newest exchanges, most recent first, as ids and texts only (what a chat
// client's history is matched against): read backwards through the (persona_id, user_id,
// seq) index as episode/list_user reads it, stopping after $limit. One row holding a list
// of five-value lists (id, conversation, turn, the two texts), in that order: nothing of
// an episode's enrichment is sent or decoded, and the driver decodes one record, not one
// per episode.
MATCH (e:Episode)
USING INDEX SEEK e:Episode(persona_id, user_id, seq)
WHERE e.persona_id = $persona_id
  AND e.user_id = $user_id
  AND e.seq < $before
WITH e
ORDER BY e.persona_id DESC, e.user_id DESC, e.seq DESC
LIMIT $limit
RETURN collect([e.id, e.conversation_id, e.turn, e.user_message, e.agent_response]) AS exchanges
