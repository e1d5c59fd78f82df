UNWIND $states AS row
MATCH (u:User {persona_id: $persona_id, id: row.user_id})
CREATE (a:AffectState)
SET a = row
CREATE (u)-[:AFFECT]->(a)
RETURN count(a) AS created
