// The incarnation of each of $persona_ids that exists (a key may be made only for these).
MATCH (p:Persona)
WHERE p.id IN $persona_ids
RETURN p.id AS id, p.incarnation AS incarnation
