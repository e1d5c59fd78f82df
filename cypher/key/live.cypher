// The incarnation of each of $opt.persona_ids that exists (a key may be made only for these).
MATCH (p:Persona)
WHERE p.id IN $opt.persona_ids
RETURN p.id AS id, p.incarnation AS incarnation
