// The dual-process runtime: narrative versions, the bounded monologue history, affect
// states per persona and user, per-turn usage, and the Thinker's retry scan.
CREATE CONSTRAINT narrative_persona_conversation_version_unique IF NOT EXISTS
FOR (n:Narrative) REQUIRE (n.persona_id, n.conversation_id, n.version) IS UNIQUE;

CREATE CONSTRAINT monologue_entry_persona_conversation_turn_unique IF NOT EXISTS
FOR (n:MonologueEntry) REQUIRE (n.persona_id, n.conversation_id, n.turn) IS UNIQUE;

CREATE CONSTRAINT affect_state_persona_user_unique IF NOT EXISTS
FOR (n:AffectState) REQUIRE (n.persona_id, n.user_id) IS UNIQUE;

CREATE CONSTRAINT turn_usage_persona_episode_component_unique IF NOT EXISTS
FOR (n:TurnUsage) REQUIRE (n.persona_id, n.episode_id, n.component) IS UNIQUE;

CREATE INDEX episode_persona_thinker_status IF NOT EXISTS
FOR (n:Episode) ON (n.persona_id, n.thinker_status);

CREATE INDEX turn_usage_persona_conversation IF NOT EXISTS
FOR (n:TurnUsage) ON (n.persona_id, n.conversation_id);
