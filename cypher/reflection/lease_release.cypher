// Drop the lease if $owner still holds it (the caller holds the persona lock).
MATCH (l:ReflectionLease {persona_id: $persona_id, owner: $owner})
DETACH DELETE l
RETURN count(*) AS released
