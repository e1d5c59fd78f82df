// Every episode with its embedding and the one its NEXT edge comes from.
MATCH (e:Episode {persona_id: $persona_id})
OPTIONAL MATCH (previous:Episode {persona_id: $persona_id})-[:NEXT]->(e)
RETURN e {.*} AS episode, previous.id AS prev_episode_id
