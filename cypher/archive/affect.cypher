MATCH (a:AffectState {persona_id: $persona_id})
RETURN a {.*} AS affect
