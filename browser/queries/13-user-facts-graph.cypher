// 13 One user's facts and where they were said (graph)
// Parameters: persona, user. Constraints are the red nodes with a yellow ring.
MATCH (u:User {persona_id: $persona, id: $user})-[has:HAS_FACT]->(f:UserFact)
OPTIONAL MATCH (f)-[from:FROM]->(e:Episode)
RETURN u, has, f, from, e
