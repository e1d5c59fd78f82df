// The persona's committed reflections: where each happened, when, what it produced and what
// its decay review advised.
MATCH (r:Reflection {persona_id: $persona_id})
WHERE r.outcome = 'committed'
RETURN r {.id, .interaction_count, .started_at, .snapshot_version, .advice} AS reflection
ORDER BY r.interaction_count, r.started_at
