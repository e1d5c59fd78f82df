-- The persona's semantic self-model (seed 002's fixed identity): traits, values and its
-- own goals, JSON lists of short texts, set when the persona is created. Existing personas
-- have none: the affect stages then read the core identity alone.
ALTER TABLE personas ADD COLUMN self_traits TEXT NOT NULL DEFAULT '[]';
ALTER TABLE personas ADD COLUMN self_values TEXT NOT NULL DEFAULT '[]';
ALTER TABLE personas ADD COLUMN self_goals TEXT NOT NULL DEFAULT '[]';
