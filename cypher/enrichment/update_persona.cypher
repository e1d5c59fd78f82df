MATCH (p:Persona {id: $persona_id})
SET p.interaction_count = $interaction_count,
    p.disagreement_window = $disagreement_window,
    p.shift_since_reflection = p.shift_since_reflection + $shift_total
RETURN p.interaction_count AS interaction_count
