// Every fact, retracted ones too.
MATCH (f:UserFact {persona_id: $persona_id})
RETURN f {.*} AS fact
