// Erasure records (kept when a persona is deleted, so a restored one may meet its own);
// their subjects are keyed as their store keyed them.
UNWIND $erasures AS row
MERGE (x:Erasure {persona_id: $persona_id, id: row.id})
SET x += row, x.subject_keyed = true
RETURN count(x) AS written
