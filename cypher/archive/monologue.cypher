MATCH (m:MonologueEntry {persona_id: $persona_id})
RETURN m {.*} AS entry
