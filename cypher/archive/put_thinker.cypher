// Turns answered by `respond`: the Thinker's bookkeeping lives on their episodes.
UNWIND $turns AS row
MATCH (e:Episode {persona_id: $persona_id, id: row.episode_id})
USING INDEX SEEK e:Episode(persona_id, id)
SET e.thinker_status = row.status,
    e.thinker_attempts = row.attempts,
    e.thinker_error = row.error,
    e.thinker_mode = row.mode,
    e.thinker_affect = row.affect,
    e.narrative_version_used = row.narrative_version_used,
    e.thinker_created_at = row.created_at,
    e.thinker_updated_at = row.updated_at
RETURN count(e) AS updated
