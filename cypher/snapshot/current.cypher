// No row: unknown persona. A row with a null snapshot would mean a broken graph.
MATCH (p:Persona {id: $persona_id})
OPTIONAL MATCH (p)-[:CURRENT]->(s:Snapshot)
RETURN s {.*} AS snapshot
