MATCH (u:User {persona_id: $persona_id})
RETURN u {.id, .created_at} AS user
