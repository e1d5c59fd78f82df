// The users that hold an active fact without its active key (written before the key).
MATCH (f:UserFact)
WHERE NOT f.retracted AND f.active_key IS NULL
RETURN DISTINCT f.persona_id AS persona_id, f.user_id AS user_id
