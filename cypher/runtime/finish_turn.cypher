// Close a thought-about turn: move the conversation's counters and mark the turn done.
MATCH (c:Conversation {persona_id: $persona_id, id: $conversation_id})
      -[:HAS_EPISODE]->(e:Episode {persona_id: $persona_id, id: $episode_id})
SET c.narrative_version = $narrative_version,
    c.thought_turn = $turn,
    c.mind_updated_at = $at,
    e.thinker_status = 'done',
    e.thinker_error = null,
    e.thinker_updated_at = $at
RETURN e.id AS id
