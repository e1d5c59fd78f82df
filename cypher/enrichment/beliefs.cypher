// The persona's beliefs (retired ones too) of the topics $topics, by topic: what planning a
// piece of an enrichment backlog reads besides the backlog (enrichment/backlog reads no
// belief). Seeks the (persona_id, topic) uniqueness constraint per topic; a topic without
// a belief gives no row.
UNWIND $topics AS topic
MATCH (b:Belief {persona_id: $persona_id, topic: topic})
RETURN b {.*, topic_embedding: null} AS belief
ORDER BY b.topic
