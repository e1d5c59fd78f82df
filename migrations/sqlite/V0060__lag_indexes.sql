-- The oldest pending Thinker turn of a persona in index order (the lag of its thinking;
-- the oldest pending episode already is: episodes_by_status ends in seq).
CREATE INDEX thinker_turns_by_status_time ON thinker_turns (persona_id, status, created_at);
