// (Episode)-[:MENTIONS]->(Topic) for the episode's topics.
MATCH (e:Episode {persona_id: $persona_id, id: $episode_id})
UNWIND $topics AS name
MERGE (t:Topic {persona_id: $persona_id, name: name})
MERGE (e)-[:MENTIONS]->(t)
RETURN count(t) AS linked
