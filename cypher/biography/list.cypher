// The persona's biography entries with their vectors, oldest first, to a limit.
MATCH (b:BiographyEntry {persona_id: $persona_id})
RETURN b {.*} AS entry
ORDER BY b.created_at, b.id
LIMIT $limit
