// Reads bounded by what they show (issue 27): `context` reads the persona's strongest few
// beliefs and the ones relevant to the message through indexes, never every belief; a page
// of a conversation's episodes reads that page.
//
// The strongest: beliefs keep strength = |position| x confidence (written with every belief
// by the store, by reflections' decay), read backwards through this index to a limit.
CREATE INDEX belief_persona_strength IF NOT EXISTS
FOR (n:Belief) ON (n.persona_id, n.status, n.strength);

// A belief created by a commit is marked embed_pending until `context` has embedded its
// topic (the topic's words, through the deployment's embedder) and stored topic_embedding.
CREATE INDEX belief_persona_embed_pending IF NOT EXISTS
FOR (n:Belief) ON (n.persona_id, n.embed_pending);

// Episode listing is paged by seq: a conversation's newest turns (what the Talker reads on
// every reply, and `sonality episodes --conversation`) come from this index read backwards
// from the cursor to the limit, never a sort of the conversation's whole history.
CREATE INDEX episode_conversation_seq IF NOT EXISTS
FOR (n:Episode) ON (n.persona_id, n.conversation_id, n.seq);

// Beliefs made before this step.
MATCH (b:Belief)
WHERE b.strength IS NULL
SET b.strength = abs(b.position) * b.confidence;

MATCH (b:Belief)
WHERE b.topic_embedding IS NULL AND b.embed_pending IS NULL
SET b.embed_pending = true;

// The relevant: a vector index over the topic embeddings. On a server that speaks Cypher 25
// (2026.x) it filters by persona and status inside the search (the SEARCH clause); on 5.26
// it is plain and the store keeps the persona's hits of a bounded candidate list (an exact
// scan of the persona's topics when too few are the persona's). The statement for 2026.x
// comes first: on 5.26 it is skipped, on 2026.x the plain one then finds the name taken.
// Unquantised on 2026.x, so the index's own order is the exact one (measured on episodes,
// V0271).
CYPHER 25
CREATE VECTOR INDEX belief_topic_embedding IF NOT EXISTS
FOR (b:Belief) ON b.topic_embedding
WITH [b.persona_id, b.status]
OPTIONS {
  indexConfig: {
    `vector.dimensions`: $embedding_dimensions,
    `vector.similarity_function`: 'cosine',
    `vector.quantization.enabled`: false
  }
};

CREATE VECTOR INDEX belief_topic_embedding IF NOT EXISTS
FOR (b:Belief) ON b.topic_embedding
OPTIONS {
  indexConfig: {
    `vector.dimensions`: $embedding_dimensions,
    `vector.similarity_function`: 'cosine'
  }
};
