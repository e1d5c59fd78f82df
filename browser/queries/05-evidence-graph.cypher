// 05 One belief with its evidence and who said it (graph)
// Parameters: persona, topic.
MATCH (b:Belief {persona_id: $persona, topic: $topic})
OPTIONAL MATCH (e:Episode {persona_id: $persona})-[edge:SUPPORTS|CONTRADICTS]->(b)
OPTIONAL MATCH (u:User {persona_id: $persona, id: e.user_id})
RETURN b, edge, e, u
