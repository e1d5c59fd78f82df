// 12 One user's pinned facts, constraints first
// Parameters: persona, user. Every one of these is in every context for this user.
MATCH (:User {persona_id: $persona, id: $user})-[:HAS_FACT]->(f:UserFact)
WHERE NOT coalesce(f.retracted, false)
OPTIONAL MATCH (f)-[:FROM]->(e:Episode)
RETURN f.kind AS kind,
       f.severity AS severity,
       f.text AS fact,
       f.created_at AS learned_at,
       left(e.user_message, 120) AS from_message,
       e.id AS episode
ORDER BY CASE kind WHEN 'constraint' THEN 0 WHEN 'preference' THEN 1 ELSE 2 END,
         severity DESC, learned_at
