UNWIND $insights AS row
MATCH (e:Episode {persona_id: $persona_id, id: row.episode_id})
USING INDEX SEEK e:Episode(persona_id, id)
CREATE (i:Insight)
SET i = row
FOREACH (_ IN CASE WHEN i.status = 'consumed' THEN [1] ELSE [] END | SET i:Consumed)
CREATE (e)-[:YIELDED]->(i)
RETURN count(i) AS created
