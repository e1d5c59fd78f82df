// The persona's affect state towards one user.
MATCH (a:AffectState {persona_id: $persona_id, user_id: $user_id})
RETURN a {.*} AS affect
