// How many insight parts wait for a retry (pending) or were given up (failed).
UNWIND ['pending', 'failed'] AS status
MATCH (e:Episode {persona_id: $persona_id, insight_status: status})
RETURN status, count(e) AS n
