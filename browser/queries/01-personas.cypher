// 01 Personas, their topics and users
// No parameters. Pick a persona id, topic and user from here for the other queries.
MATCH (p:Persona)
OPTIONAL MATCH (p)-[:CURRENT]->(s:Snapshot)
OPTIONAL MATCH (p)-[:HOLDS]->(b:Belief)
WITH p, s, collect(b.topic) AS topics,
     count(CASE WHEN b.status = 'active' THEN 1 END) AS active_beliefs
OPTIONAL MATCH (p)-[:TALKS_WITH]->(u:User)
WITH p, s, topics, active_beliefs, collect(u.id) AS users
RETURN p.id AS persona,
       p.name AS name,
       p.interaction_count AS interactions,
       p.last_reflection_at AS last_reflection_at_interaction,
       s.version AS snapshot_version,
       active_beliefs,
       topics,
       users
ORDER BY persona
