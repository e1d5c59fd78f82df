// New biography entries of one persona (told apart from what it holds by the caller),
// each owned by the persona through REMEMBERS.
MATCH (p:Persona {id: $persona_id})
UNWIND $entries AS row
CREATE (b:BiographyEntry)
SET b = row
CREATE (p)-[:REMEMBERS]->(b)
RETURN count(b) AS created
