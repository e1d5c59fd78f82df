// Record one failed enrichment attempt (counted unless $counted is false: an outage);
// no row when the episode is unknown.
MATCH (e:Episode {persona_id: $persona_id, id: $episode_id})
SET e.enrichment_attempts = e.enrichment_attempts + CASE WHEN $counted THEN 1 ELSE 0 END,
    e.enrichment_error = $error,
    e.enrichment_status = CASE
      WHEN $failed AND e.enrichment_status = 'pending' THEN 'failed'
      ELSE e.enrichment_status
    END
RETURN e.id AS id
