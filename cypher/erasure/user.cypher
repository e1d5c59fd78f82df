// No row: the persona has no such user.
MATCH (u:User {persona_id: $persona_id, id: $user_id})
RETURN u.id AS id
