// No row when the fact is not this persona's user's. A retracted fact has no active key.
MATCH (f:UserFact {id: $fact_id, persona_id: $persona_id, user_id: $user_id})
SET f.retracted = true
REMOVE f.active_key
RETURN f.id AS id
