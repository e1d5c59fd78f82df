// (Episode)-[:STAGED]->(StagedUpdate), one row per new staged delta.
UNWIND $staged AS update
MATCH (e:Episode {persona_id: $persona_id, id: update.episode_id})
USING INDEX SEEK e:Episode(persona_id, id)
CREATE (s:StagedUpdate)
SET s = update
CREATE (e)-[:STAGED]->(s)
RETURN count(s) AS created
