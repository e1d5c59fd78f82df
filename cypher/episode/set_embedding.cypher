// Store the embedding as a float32 vector property (what the vector index reads).
MATCH (e:Episode {persona_id: $persona_id, id: $episode_id})
CALL db.create.setNodeVectorProperty(e, 'embedding', $embedding)
RETURN e.id AS id
