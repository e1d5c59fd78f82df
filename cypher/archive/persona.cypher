// The persona with its episode counter (no row: unknown persona).
MATCH (p:Persona {id: $persona_id})
RETURN p {.*} AS persona, p.episode_seq AS episode_seq
