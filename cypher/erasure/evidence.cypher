// Every enriched episode of the persona as the opinion rules saw it (the user's message
// for the repetition rule; no response), in the order of enrichment: what an erasure replays.
MATCH (e:Episode {persona_id: $persona_id})
WHERE e.enrichment_status = 'enriched'
RETURN e {.id, .user_id, .conversation_id, .seq, .interaction_index, .user_message, .ess_score,
          .ess_reasoning_type, .ess_source_reliability, .ess_internal_consistency,
          .ess_novelty, .ess_direction, .ess_topics, .defaulted, .topics, .importance,
          .disagreement} AS evidence
ORDER BY e.interaction_index
