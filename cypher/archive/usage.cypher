MATCH (u:TurnUsage {persona_id: $persona_id})
RETURN u {.*} AS usage
