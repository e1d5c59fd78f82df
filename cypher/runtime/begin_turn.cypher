// Register a turn answered by `respond`: the Thinker's bookkeeping lives on its Episode,
// the conversation's compare-and-swap counters on the Conversation (0 until first used).
// No row: the episode is unknown or does not match the turn (nothing written). The
// turn's usage so far ($rows, runtime/add_usage's rows; the Talker's call) is added in the
// same statement, one round trip less on every `respond`. $turn null: the episode's own
// (runtime/append_turn registers the episode it has just appended).
MATCH (c:Conversation {persona_id: $persona_id, id: $conversation_id})
      -[:HAS_EPISODE]->(e:Episode {persona_id: $persona_id, id: $episode_id})
WHERE e.user_id = $user_id AND e.turn = coalesce($turn, e.turn)
SET e.thinker_status = $status,
    e.thinker_attempts = 0,
    e.thinker_error = null,
    e.thinker_mode = $mode,
    e.thinker_affect = $affect,
    e.narrative_version_used = $narrative_version_used,
    e.thinker_created_at = $created_at,
    e.thinker_updated_at = $updated_at,
    c.narrative_version = coalesce(c.narrative_version, 0),
    c.thought_turn = coalesce(c.thought_turn, 0)
WITH e.id AS id
CALL () {
  INCLUDE runtime/add_usage
}
RETURN id, written
