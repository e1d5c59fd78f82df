// A persona with its first snapshot as CURRENT. The unique constraint on Persona.id turns
// a duplicate into a constraint violation (AlreadyExists).
CREATE (p:Persona $persona)
CREATE (s:Snapshot $snapshot)
CREATE (p)-[:CURRENT]->(s)
RETURN p {.*} AS persona
