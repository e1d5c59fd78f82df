// Count one failed insight retry; $failed gives the insight part up. No row when the
// episode is unknown.
MATCH (e:Episode {persona_id: $persona_id, id: $episode_id})
SET e.insight_attempts = coalesce(e.insight_attempts, 0) + 1,
    e.enrichment_error = $error,
    e.insight_status = CASE
      WHEN $failed AND e.insight_status = 'pending' THEN 'failed'
      ELSE e.insight_status
    END
RETURN e.id AS id
