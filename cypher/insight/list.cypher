// Oldest first; a null $status lists all.
MATCH (i:Insight {persona_id: $persona_id})
WHERE $status IS NULL OR i.status = $status
RETURN i {.*} AS insight
ORDER BY i.created_at, i.id
