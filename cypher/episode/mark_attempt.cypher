// Count one failed enrichment attempt; no row when the episode is unknown.
MATCH (e:Episode {persona_id: $persona_id, id: $episode_id})
SET e.enrichment_attempts = e.enrichment_attempts + 1,
    e.enrichment_error = $error,
    e.enrichment_status = CASE WHEN $failed THEN 'failed' ELSE e.enrichment_status END
RETURN e.id AS id
