// Replace a fact's kind, text, severity and retraction; the Constraint display label
// follows the kind.
MATCH (f:UserFact {persona_id: $persona_id, id: $fact_id})
SET f.kind = $kind, f.text = $text, f.severity = $severity, f.retracted = $retracted
REMOVE f:Constraint
FOREACH (_ IN CASE WHEN f.kind = 'constraint' THEN [1] ELSE [] END | SET f:Constraint)
RETURN f {.*} AS fact
