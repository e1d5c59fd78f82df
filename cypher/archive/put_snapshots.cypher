// Snapshots, CURRENT to the newest, each PREVIOUS to the next older one ($snapshots is
// sorted by version).
MATCH (p:Persona {id: $persona_id})
UNWIND range(0, size($snapshots) - 1) AS i
CREATE (s:Snapshot)
SET s = $snapshots[i]
WITH p, s
ORDER BY s.version
WITH p, collect(s) AS versions
FOREACH (i IN range(1, size(versions) - 1) |
  FOREACH (newer IN [versions[i]] |
    FOREACH (older IN [versions[i - 1]] | CREATE (newer)-[:PREVIOUS]->(older))
  )
)
FOREACH (current IN versions[size(versions) - 1..] | CREATE (p)-[:CURRENT]->(current))
RETURN size(versions) AS created
