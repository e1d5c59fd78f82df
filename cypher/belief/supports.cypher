// Provenance edges with delta >= 0 (belief/contradicts writes the negative ones).
UNWIND $edges AS edge
WITH edge
WHERE edge.delta >= 0
MATCH (e:Episode {persona_id: $persona_id, id: edge.episode_id})
USING INDEX SEEK e:Episode(persona_id, id)
MATCH (b:Belief {persona_id: $persona_id, topic: edge.topic})
CREATE (e)-[:SUPPORTS {
  delta: edge.delta,
  committed_at: edge.committed_at,
  caption: CASE WHEN edge.delta >= 0 THEN '+' ELSE '' END + toString(round(edge.delta, 3))
}]->(b)
RETURN count(*) AS created
