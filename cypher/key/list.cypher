MATCH (k:ApiKey)
RETURN properties(k) AS key
ORDER BY k.created_at, k.id
