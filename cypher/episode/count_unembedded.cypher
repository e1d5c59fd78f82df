// How many of the persona's episodes have no embedding.
MATCH (e:Episode {persona_id: $persona_id})
WHERE e.embedding IS NULL
RETURN count(e) AS n
