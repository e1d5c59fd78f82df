// Oldest first; a null $opt.status lists all.
MATCH (i:Insight {persona_id: $persona_id})
WHERE $opt.status IS NULL OR i.status = $opt.status
RETURN i {.*} AS insight
ORDER BY i.created_at, i.id
