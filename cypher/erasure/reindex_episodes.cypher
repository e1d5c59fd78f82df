// The remaining episodes' interaction index and disagreement after the replay.
UNWIND $rows AS row
MATCH (e:Episode {persona_id: $persona_id, id: row.episode_id})
USING INDEX SEEK e:Episode(persona_id, id)
SET e.interaction_index = row.interaction_index, e.disagreement = row.disagreement
RETURN count(e) AS updated
