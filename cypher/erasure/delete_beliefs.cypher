// Beliefs no remaining evidence supports.
MATCH (b:Belief {persona_id: $persona_id})
WHERE b.topic IN $topics
DETACH DELETE b
RETURN count(*) AS deleted
