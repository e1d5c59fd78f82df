MATCH (e:Episode {persona_id: $persona_id, id: $episode_id})
CREATE (i:Insight $insight)
CREATE (e)-[:YIELDED]->(i)
RETURN i.id AS id
