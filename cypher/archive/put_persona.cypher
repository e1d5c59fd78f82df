// The persona itself; the (Persona.id) constraint refuses one that exists.
CREATE (p:Persona $persona)
RETURN p.id AS id
