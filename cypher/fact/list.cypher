// One user's active facts, oldest first.
MATCH (f:UserFact {persona_id: $persona_id, user_id: $user_id})
WHERE NOT f.retracted
RETURN f {.*} AS fact
ORDER BY f.created_at, f.id
