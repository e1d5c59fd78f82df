// Every staged update, committed ones too.
MATCH (s:StagedUpdate {persona_id: $persona_id})
RETURN s {.*} AS staged
