// 11 The snapshot chain (graph)
// Parameters: persona. CURRENT points at the newest version; PREVIOUS leads back to the first.
MATCH chain = (:Persona {id: $persona})-[:CURRENT]->(:Snapshot)-[:PREVIOUS*0..]->(first:Snapshot)
WHERE NOT (first)-[:PREVIOUS]->(:Snapshot)
OPTIONAL MATCH (r:Reflection)-[produced:PRODUCED]->(s:Snapshot)
WHERE s IN nodes(chain)
RETURN chain, r, produced, s
