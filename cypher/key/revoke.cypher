MATCH (k:ApiKey {id: $key_id})
SET k.revoked_at = coalesce(k.revoked_at, $at)
RETURN properties(k) AS key
