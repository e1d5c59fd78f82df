// The user's active facts, oldest first (all of them: `context` pins every fact, within
// its own budget, and says how many it left out).
OPTIONAL MATCH (f:UserFact {persona_id: $persona_id, user_id: $user_id})
WHERE NOT f.retracted
WITH f
ORDER BY f.created_at, f.id
RETURN collect(f {.*, created_at: null, created_at_us: f.created_at.epochMillis * 1000 + f.created_at.microsecond % 1000}) AS facts
