// Conversations with their append and Thinker counters (thought_turn null: the Thinker
// never touched it).
MATCH (c:Conversation {persona_id: $persona_id})
RETURN c {.id, .user_id, .created_at, .last_turn, .last_episode_id, .thought_turn,
          narrative_version: coalesce(c.narrative_version, 0)} AS conversation
