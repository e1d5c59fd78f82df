// Keep the PREVIOUS chain whole after a purge: the oldest version kept above the gap
// points to the newest one below it.
MATCH (keep:Snapshot {persona_id: $persona_id, version: $below})
WHERE NOT EXISTS { MATCH (keep)-[:PREVIOUS]->(:Snapshot) }
CALL (keep) {
  MATCH (older:Snapshot {persona_id: $persona_id})
  WHERE older.version < $from
  RETURN older
  ORDER BY older.version DESC
  LIMIT 1
}
CREATE (keep)-[:PREVIOUS]->(older)
RETURN older.version AS linked
