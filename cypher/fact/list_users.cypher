// The active facts of several users (a backlog chunk's users), in no particular order.
MATCH (f:UserFact {persona_id: $persona_id})
WHERE f.user_id IN $user_ids AND NOT f.retracted
RETURN f {.*} AS fact
