// Add per-component usage to turns: one TurnUsage node per (episode, component), which
// takes its conversation and turn from its episode (a row need name only the episode).
UNWIND $rows AS row
MATCH (e:Episode {persona_id: $persona_id, id: row.episode_id})
USING INDEX SEEK e:Episode(persona_id, id)
MERGE (u:TurnUsage {persona_id: $persona_id, episode_id: row.episode_id,
                    component: row.component})
  ON CREATE SET u.conversation_id = e.conversation_id, u.turn = e.turn, u.calls = 0,
                u.input_tokens = 0, u.output_tokens = 0, u.cost_usd = 0.0,
                u.unpriced_calls = 0
MERGE (e)-[:USAGE]->(u)
SET u.calls = u.calls + row.calls,
    u.input_tokens = u.input_tokens + row.input_tokens,
    u.output_tokens = u.output_tokens + row.output_tokens,
    u.cost_usd = u.cost_usd + row.cost_usd,
    u.unpriced_calls = u.unpriced_calls + row.unpriced_calls
RETURN count(*) AS written
