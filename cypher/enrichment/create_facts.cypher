// (User)-[:HAS_FACT]->(UserFact)-[:FROM]->(Episode), one row per fact.
UNWIND $facts AS fact
MATCH (u:User {persona_id: $persona_id, id: fact.user_id})
MATCH (e:Episode {persona_id: $persona_id, id: fact.episode_id})
CREATE (f:UserFact)
SET f = fact
FOREACH (_ IN CASE WHEN fact.kind = 'constraint' THEN [1] ELSE [] END | SET f:Constraint)
CREATE (u)-[:HAS_FACT]->(f)
CREATE (f)-[:FROM]->(e)
RETURN count(f) AS created
