// 09 What each reflection consumed and produced (graph)
// Parameters: persona. No rows: the persona has not reflected yet.
MATCH (r:Reflection {persona_id: $persona})
OPTIONAL MATCH (r)-[consumed:CONSUMED]->(i:Insight)
OPTIONAL MATCH (r)-[produced:PRODUCED]->(s:Snapshot)
RETURN r, consumed, i, produced, s
