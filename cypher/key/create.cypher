CREATE (k:ApiKey)
SET k = $key
RETURN properties(k) AS key
