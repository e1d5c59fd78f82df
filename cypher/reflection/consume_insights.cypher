// Mark exactly the insights the reflection read as consumed (with the Consumed display
// label), linked (Reflection)-[:CONSUMED]->(Insight). Returns how many were still pending.
MATCH (r:Reflection {persona_id: $persona_id, id: $reflection_id})
UNWIND $ids AS insight_id
MATCH (i:Insight {persona_id: $persona_id, id: insight_id})
WHERE i.status = 'pending'
SET i.status = 'consumed', i:Consumed
CREATE (r)-[:CONSUMED]->(i)
RETURN count(i) AS consumed
