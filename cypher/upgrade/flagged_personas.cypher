// Personas whose snapshot versions an older Sonality's erasure flagged for review.
MATCH (p:Persona)
WHERE p.review_from_version IS NOT NULL
RETURN p.id AS id, p.review_from_version AS review_from_version
