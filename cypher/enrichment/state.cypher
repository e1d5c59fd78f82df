// What the enrichment commit checks, read after the caller locked the persona:
// the persona's interaction count and the episode's enrichment status (null if unknown).
MATCH (p:Persona {id: $persona_id})
OPTIONAL MATCH (e:Episode {persona_id: $persona_id, id: $episode_id})
RETURN p.interaction_count AS interaction_count, e.enrichment_status AS status
