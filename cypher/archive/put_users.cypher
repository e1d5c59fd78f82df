MATCH (p:Persona {id: $persona_id})
UNWIND $users AS user
CREATE (u:User {persona_id: $persona_id, id: user.id, created_at: user.created_at})
CREATE (p)-[:TALKS_WITH]->(u)
RETURN count(u) AS created
