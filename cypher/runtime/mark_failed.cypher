// Count a failed Thinker attempt; a turn already done is left alone (no row).
MATCH (e:Episode {persona_id: $persona_id, id: $episode_id})
WHERE e.thinker_status IN ['pending', 'failed', 'abandoned']
SET e.thinker_status = $status,
    e.thinker_attempts = coalesce(e.thinker_attempts, 0) + 1,
    e.thinker_error = $error,
    e.thinker_updated_at = $at
RETURN e.id AS id
