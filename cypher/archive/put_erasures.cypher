// Erasure records (kept when a persona is deleted, so a restored one may meet its own).
UNWIND $erasures AS row
MERGE (x:Erasure {persona_id: $persona_id, id: row.id})
SET x += row
RETURN count(x) AS written
