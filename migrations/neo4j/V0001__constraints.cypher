// Unique keys. Everything a persona owns is keyed within its persona_id; the ids minted
// by Sonality itself (insights, facts, staged updates) are unique outright.
CREATE CONSTRAINT persona_id_unique IF NOT EXISTS
FOR (n:Persona) REQUIRE n.id IS UNIQUE;

CREATE CONSTRAINT episode_persona_id_unique IF NOT EXISTS
FOR (n:Episode) REQUIRE (n.persona_id, n.id) IS UNIQUE;

CREATE CONSTRAINT belief_persona_topic_unique IF NOT EXISTS
FOR (n:Belief) REQUIRE (n.persona_id, n.topic) IS UNIQUE;

CREATE CONSTRAINT snapshot_persona_version_unique IF NOT EXISTS
FOR (n:Snapshot) REQUIRE (n.persona_id, n.version) IS UNIQUE;

CREATE CONSTRAINT user_persona_id_unique IF NOT EXISTS
FOR (n:User) REQUIRE (n.persona_id, n.id) IS UNIQUE;

CREATE CONSTRAINT conversation_persona_id_unique IF NOT EXISTS
FOR (n:Conversation) REQUIRE (n.persona_id, n.id) IS UNIQUE;

CREATE CONSTRAINT insight_id_unique IF NOT EXISTS
FOR (n:Insight) REQUIRE n.id IS UNIQUE;

CREATE CONSTRAINT user_fact_id_unique IF NOT EXISTS
FOR (n:UserFact) REQUIRE n.id IS UNIQUE;

CREATE CONSTRAINT staged_update_id_unique IF NOT EXISTS
FOR (n:StagedUpdate) REQUIRE n.id IS UNIQUE;

CREATE CONSTRAINT topic_persona_name_unique IF NOT EXISTS
FOR (n:Topic) REQUIRE (n.persona_id, n.name) IS UNIQUE;

CREATE CONSTRAINT migration_version_unique IF NOT EXISTS
FOR (n:Migration) REQUIRE n.version IS UNIQUE;
