UNWIND $rows AS row
MATCH (e:Episode {persona_id: $persona_id, id: row.episode_id})
USING INDEX SEEK e:Episode(persona_id, id)
CREATE (u:TurnUsage)
SET u = row
CREATE (e)-[:USAGE]->(u)
RETURN count(u) AS created
