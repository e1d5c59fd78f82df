// Committed reflections renumbered to the interactions that remain, keeping only the
// advice that did not depend on the erased episodes.
UNWIND $rows AS row
MATCH (r:Reflection {persona_id: $persona_id, id: row.id})
SET r.interaction_count = row.interaction_count, r.advice = row.advice
RETURN count(r) AS updated
