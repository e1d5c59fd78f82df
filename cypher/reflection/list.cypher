// The persona's reflections, newest first.
MATCH (r:Reflection {persona_id: $persona_id})
RETURN r {.*} AS reflection
ORDER BY r.started_at DESC, r.id DESC
LIMIT $limit
