// Every snapshot of the persona, newest first (none for an unknown persona, like the
// other list reads).
MATCH (s:Snapshot {persona_id: $persona_id})
RETURN s {.*} AS snapshot
ORDER BY s.version DESC
