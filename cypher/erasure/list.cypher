// The persona's erasure records, oldest first.
MATCH (x:Erasure {persona_id: $persona_id})
RETURN x {.*} AS erasure
ORDER BY x.created_at, x.id
