// The persona's reflection markers after a committed reflection. The shift read at the
// start is subtracted (not reset), so shifts committed meanwhile still count.
MATCH (p:Persona {id: $persona_id})
WITH p, p.shift_since_reflection - $shift_consumed AS left
SET p.last_reflection_at = $last_reflection_at,
    p.last_reflection_attempt_at = $last_reflection_at,
    p.shift_since_reflection = CASE WHEN left < 0.0 THEN 0.0 ELSE left END
RETURN p.id AS id
