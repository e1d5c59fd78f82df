// The persona's snapshot versions without their text, oldest first (what an erasure judges
// them by).
MATCH (s:Snapshot {persona_id: $persona_id})
RETURN s.version AS version, coalesce(s.reason, 'initial') AS reason
ORDER BY s.version
