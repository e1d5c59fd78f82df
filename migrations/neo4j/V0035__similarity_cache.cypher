// The per-process similarity cache (issue 11): every embedding write stamps the episode
// with embedding_rev (the server's clock, in the unit of seq); a cache reads the user's
// rows stamped after the last it saw through this index, and counts the user's embedded
// episodes through it without touching a node.
CREATE INDEX episode_user_embedding_rev IF NOT EXISTS
FOR (n:Episode) ON (n.persona_id, n.user_id, n.embedding_rev);

// The user's latest episodes in seq order straight from an index (episode/list_user and
// context/read stop after their limit instead of sorting the user's whole history).
CREATE INDEX episode_user_seq IF NOT EXISTS
FOR (n:Episode) ON (n.persona_id, n.user_id, n.seq);

// Episodes embedded before the stamp existed.
MATCH (e:Episode)
WHERE e.embedding IS NOT NULL AND e.embedding_rev IS NULL
SET e.embedding_rev = coalesce(e.seq, 0);
