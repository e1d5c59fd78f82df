// One monologue entry, hung off its conversation and the episode it thought about.
MATCH (c:Conversation {persona_id: $persona_id, id: $conversation_id})
      -[:HAS_EPISODE]->(e:Episode {persona_id: $persona_id, id: $episode_id})
CREATE (m:MonologueEntry $entry)
CREATE (c)-[:THOUGHT]->(m)
CREATE (m)-[:ABOUT]->(e)
RETURN m.turn AS turn
