// Committed reflections renumbered to the interactions that remain.
UNWIND $rows AS row
MATCH (r:Reflection {persona_id: $persona_id, id: row.id})
SET r.interaction_count = row.interaction_count
RETURN count(r) AS updated
