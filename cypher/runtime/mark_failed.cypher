// Count a failed Thinker attempt. The adapter read the turn under the conversation lock
// and decided (storage.checks.failed_attempt: a done turn stays done, no call then).
MATCH (e:Episode {persona_id: $persona_id, id: $episode_id})
SET e.thinker_status = $status,
    e.thinker_attempts = coalesce(e.thinker_attempts, 0) + 1,
    e.thinker_error = $error,
    e.thinker_updated_at = $at
RETURN e.id AS id
