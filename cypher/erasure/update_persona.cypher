// The persona's counters after an erasure, and its snapshot-review marker.
MATCH (p:Persona {id: $persona_id})
SET p.interaction_count = $interaction_count,
    p.disagreement_window = $disagreement_window,
    p.shift_since_reflection = $shift_since_reflection,
    p.last_reflection_at = $last_reflection_at,
    p.last_reflection_attempt_at = $last_reflection_attempt_at,
    p.review_from_version = $review_from_version
RETURN p.id AS id
