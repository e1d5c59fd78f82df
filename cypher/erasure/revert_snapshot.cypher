// An erasure's new CURRENT: the text of the clean version $source, or the core identity
// when $source is null, recorded as a rollback after the CURRENT it replaces.
MATCH (p:Persona {id: $persona_id})-[current:CURRENT]->(old:Snapshot)
OPTIONAL MATCH (source:Snapshot {persona_id: $persona_id, version: $source})
CREATE (s:Snapshot {
  persona_id: $persona_id,
  version: $version,
  text: coalesce(source.text, p.core_identity),
  reason: $reason,
  created_at: $created_at
})
CREATE (p)-[:CURRENT]->(s)
CREATE (s)-[:PREVIOUS]->(old)
DELETE current
RETURN s.version AS version
