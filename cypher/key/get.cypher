MATCH (k:ApiKey {id: $key_id})
RETURN properties(k) AS key
