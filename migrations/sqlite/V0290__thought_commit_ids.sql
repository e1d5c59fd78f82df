-- A done Thinker turn keeps the id of the commit that closed it, so the same commit run
-- again (after a connection lost once it had landed) is known as landed, not refused as a
-- conflict (storage.checks.thought_landed). Turns closed before this migration have none.
ALTER TABLE thinker_turns ADD COLUMN commit_id TEXT;
