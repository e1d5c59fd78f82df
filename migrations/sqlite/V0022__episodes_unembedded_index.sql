-- Episodes a remote embedder failed on, found without a scan for the embedding backfill
-- (the worker and `sonality enrich`) and `doctor`'s count.
CREATE INDEX episodes_unembedded ON episodes (persona_id, seq) WHERE embedding IS NULL;
