// One erasure audit record (no user text; kept after its persona is deleted). Its subject
// is keyed with the store's secret (records of older Sonality versions lack subject_keyed
// until `migrate` re-keys them).
CREATE (x:Erasure $erasure)
SET x.subject_keyed = true
RETURN x.id AS id
