// (User)-[:HAS_FACT]->(UserFact)-[:FROM]->(Episode), one row per fact.
UNWIND $facts AS fact
MATCH (u:User {persona_id: $persona_id, id: fact.user_id})
MATCH (e:Episode {persona_id: $persona_id, id: fact.episode_id})
CREATE (f:UserFact)
SET f = fact
CREATE (u)-[:HAS_FACT]->(f)
CREATE (f)-[:FROM]->(e)
RETURN count(f) AS created
