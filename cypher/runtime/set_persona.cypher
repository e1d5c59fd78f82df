// The persona's default runtime mode and affect placement for `respond`.
MATCH (p:Persona {id: $persona_id})
SET p.runtime_mode = $runtime_mode, p.affect = $affect
RETURN p {.*} AS persona
