// Clear the snapshot-review marker if it is still the one the review started from.
MATCH (p:Persona {id: $persona_id})
WHERE p.review_from_version = $from
SET p.review_from_version = null
RETURN p.id AS id
