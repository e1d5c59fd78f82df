// Upsert beliefs by (persona_id, topic) with every field, linked
// (Persona)-[:HOLDS]->(Belief)-[:ABOUT]->(Topic). Returns the personas that matched.
UNWIND $beliefs AS belief
MATCH (p:Persona {id: belief.persona_id})
MERGE (b:Belief {persona_id: belief.persona_id, topic: belief.topic})
  ON CREATE SET b.embed_pending = true
SET b += belief
// display-only state for Neo4j Browser (GraSS styles select by label, not by value)
SET b.caption = b.topic + ' ' + CASE WHEN b.position > 0 THEN '+' ELSE '' END
      + toString(round(b.position, 2))
REMOVE b:Favoured:Opposed:Firm:Retired
FOREACH (_ IN CASE WHEN b.position > 0 THEN [1] ELSE [] END | SET b:Favoured)
FOREACH (_ IN CASE WHEN b.position < 0 THEN [1] ELSE [] END | SET b:Opposed)
FOREACH (_ IN CASE WHEN b.confidence >= 0.5 THEN [1] ELSE [] END | SET b:Firm)
FOREACH (_ IN CASE WHEN b.status = 'retired' THEN [1] ELSE [] END | SET b:Retired)
MERGE (t:Topic {persona_id: belief.persona_id, name: belief.topic})
MERGE (b)-[:ABOUT]->(t)
MERGE (p)-[:HOLDS]->(b)
RETURN collect(DISTINCT p.id) AS persona_ids
