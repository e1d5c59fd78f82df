// Store the embedding as a float32 vector property (what the vector index reads), with a
// new revision stamp for the similarity caches: the server's clock in the unit of seq,
// above the episode's previous stamp (see sonality/storage/neo4j/vectors.py).
MATCH (e:Episode {persona_id: $persona_id, id: $episode_id})
CALL db.create.setNodeVectorProperty(e, 'embedding', $embedding)
WITH e, datetime.realtime() AS now
WITH e, (now.epochSeconds * 1000000 + now.microsecond) * 1000 AS clock
SET e.embedding_rev = CASE
  WHEN e.embedding_rev IS NOT NULL AND e.embedding_rev >= clock THEN e.embedding_rev + 1
  ELSE clock
END
RETURN e.id AS id
