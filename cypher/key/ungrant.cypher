// Keys whose grants changed because a persona was deleted: the personas and incarnations
// left, and the revocation of a key left with none.
UNWIND $rows AS row
MATCH (k:ApiKey {id: row.id})
SET k.persona_ids = row.persona_ids, k.incarnations = row.incarnations,
    k.revoked_at = row.revoked_at
RETURN count(k) AS updated
