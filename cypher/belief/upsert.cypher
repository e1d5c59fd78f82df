// Upsert beliefs by (persona_id, topic) with every field, linked
// (Persona)-[:HOLDS]->(Belief)-[:ABOUT]->(Topic). Returns the personas that matched.
UNWIND $beliefs AS belief
MATCH (p:Persona {id: belief.persona_id})
MERGE (b:Belief {persona_id: belief.persona_id, topic: belief.topic})
SET b += belief
MERGE (t:Topic {persona_id: belief.persona_id, name: belief.topic})
MERGE (b)-[:ABOUT]->(t)
MERGE (p)-[:HOLDS]->(b)
RETURN collect(DISTINCT p.id) AS persona_ids
