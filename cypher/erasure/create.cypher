// One erasure audit record (no user text; kept after its persona is deleted).
CREATE (x:Erasure $erasure)
RETURN x.id AS id
