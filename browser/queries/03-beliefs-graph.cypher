// 03 Beliefs and the episodes behind them (graph)
// Parameters: persona. Green favours, red opposes; darker and larger is firmer; pale is retired.
MATCH (p:Persona {id: $persona})-[holds:HOLDS]->(b:Belief)
OPTIONAL MATCH (e:Episode {persona_id: $persona})-[edge:SUPPORTS|CONTRADICTS]->(b)
RETURN p, holds, b, edge, e
