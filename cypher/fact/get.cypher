// Any fact of the persona, retracted or not.
MATCH (f:UserFact {persona_id: $persona_id, id: $fact_id})
RETURN f {.*} AS fact
