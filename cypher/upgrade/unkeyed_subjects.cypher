// Erasure records written before audit subjects were keyed (no subject_keyed).
MATCH (x:Erasure)
WHERE x.subject_keyed IS NULL
RETURN x.persona_id AS persona_id, x.id AS id, x.subject AS subject
