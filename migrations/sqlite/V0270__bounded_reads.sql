-- Reads bounded by what they show (issue 27): `context` reads the persona's strongest few
-- beliefs and the ones relevant to the message through indexes, never every belief.
--
-- A belief's topic embedding (the topic's words through the deployment's embedder, stored
-- by `context` the first time it meets the belief) and its stamp from the store-wide
-- embedding_rev counter, which the similarity cache catches up by.
ALTER TABLE beliefs ADD COLUMN topic_embedding BLOB;
ALTER TABLE beliefs ADD COLUMN topic_rev INTEGER;

-- The strongest: |position| x confidence, read backwards to a limit.
CREATE INDEX beliefs_by_strength ON beliefs (persona_id, status, abs(position) * confidence);

-- Active beliefs whose topic is not embedded yet.
CREATE INDEX beliefs_unembedded ON beliefs (persona_id, topic)
WHERE topic_embedding IS NULL AND status = 'active';

-- The cache's catch-up: topics embedded since the last it read.
CREATE INDEX beliefs_by_topic_rev ON beliefs (persona_id, topic_rev)
WHERE topic_rev IS NOT NULL;
