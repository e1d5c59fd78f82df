// Add a snapshot after the CURRENT one and move CURRENT to it. The caller holds the
// persona lock and has checked the version; the (persona_id, version) constraint backs it.
MATCH (p:Persona {id: $persona_id})-[current:CURRENT]->(old:Snapshot)
CREATE (s:Snapshot $snapshot)
CREATE (p)-[:CURRENT]->(s)
CREATE (s)-[:PREVIOUS]->(old)
DELETE current
RETURN s {.*} AS snapshot
