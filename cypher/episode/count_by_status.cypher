MATCH (e:Episode {persona_id: $persona_id})
RETURN e.enrichment_status AS status, count(*) AS n
