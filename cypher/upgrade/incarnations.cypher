// Every persona's incarnation.
MATCH (p:Persona)
RETURN p.id AS id, p.incarnation AS incarnation
