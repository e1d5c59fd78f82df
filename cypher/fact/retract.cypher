// No row when the fact is not this persona's user's.
MATCH (f:UserFact {id: $fact_id, persona_id: $persona_id, user_id: $user_id})
SET f.retracted = true
RETURN f.id AS id
