// API keys made before grants named persona incarnations.
MATCH (k:ApiKey)
WHERE k.incarnations IS NULL
RETURN properties(k) AS key
