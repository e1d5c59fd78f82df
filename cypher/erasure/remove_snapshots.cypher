// The snapshot versions that may quote erased material (never CURRENT: a new one was
// written first), then the PREVIOUS chain of the versions left rebuilt in version order.
CALL () {
  MATCH (gone:Snapshot {persona_id: $persona_id})
  WHERE gone.version IN $versions
    AND NOT EXISTS { MATCH (:Persona {id: $persona_id})-[:CURRENT]->(gone) }
  DETACH DELETE gone
}
CALL () {
  MATCH (:Snapshot {persona_id: $persona_id})-[link:PREVIOUS]->(:Snapshot)
  DELETE link
}
MATCH (s:Snapshot {persona_id: $persona_id})
WITH s
ORDER BY s.version
WITH collect(s) AS chain
FOREACH (i IN range(1, size(chain) - 1) |
  FOREACH (newer IN [chain[i]] |
    FOREACH (older IN [chain[i - 1]] |
      CREATE (newer)-[:PREVIOUS]->(older)
    )
  )
)
RETURN size(chain) AS versions
