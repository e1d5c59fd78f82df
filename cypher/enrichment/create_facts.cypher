// (User)-[:HAS_FACT]->(UserFact)-[:FROM]->(Episode), one row per fact (and a FROM edge to
// each other exchange that backs it).
UNWIND $facts AS fact
MATCH (u:User {persona_id: $persona_id, id: fact.user_id})
MATCH (e:Episode {persona_id: $persona_id, id: fact.episode_id})
USING INDEX SEEK e:Episode(persona_id, id)
CREATE (f:UserFact)
SET f = fact
FOREACH (_ IN CASE WHEN fact.kind = 'constraint' THEN [1] ELSE [] END | SET f:Constraint)
CREATE (u)-[:HAS_FACT]->(f)
CREATE (f)-[:FROM]->(e)
WITH f, fact
CALL (f, fact) {
  UNWIND coalesce(fact.also_from, []) AS other
  MATCH (o:Episode {persona_id: $persona_id, id: other})
  CREATE (f)-[:FROM]->(o)
}
RETURN count(f) AS created
