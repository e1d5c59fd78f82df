// Mark the episode enriched with its flattened evidence and enrichment fields
// ($fields maps property names to values; null removes a property).
MATCH (e:Episode {persona_id: $persona_id, id: $episode_id})
SET e += $fields
RETURN e.id AS id
