// Erasure records with their subject keyed (HMAC of the old digest under the audit key).
UNWIND $rows AS row
MATCH (x:Erasure {persona_id: row.persona_id, id: row.id})
WHERE x.subject_keyed IS NULL
SET x.subject = row.subject, x.subject_keyed = true
RETURN count(x) AS rekeyed
