// What a retried insight commit checks, read after the caller locked the persona:
// the episode's insight status ('none' before enrichment; no row if unknown).
MATCH (e:Episode {persona_id: $persona_id, id: $episode_id})
RETURN coalesce(e.insight_status, 'none') AS status
