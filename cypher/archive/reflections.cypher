// Every reflection attempt with the insights it consumed.
MATCH (r:Reflection {persona_id: $persona_id})
OPTIONAL MATCH (r)-[:CONSUMED]->(i:Insight)
RETURN r {.*} AS reflection, collect(i.id) AS consumed
