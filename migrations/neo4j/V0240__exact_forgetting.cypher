// Forgetting is exact and immediate (issue 24).

// One active fact per user and key: active_key is the normalised text, absent while
// retracted (`migrate` fills it for the facts written before, merging any duplicates).
CREATE CONSTRAINT user_fact_active_key_unique IF NOT EXISTS
FOR (n:UserFact) REQUIRE (n.persona_id, n.user_id, n.active_key) IS UNIQUE;

// The store's own secrets (the audit key that keys erasure subjects), one per name.
CREATE CONSTRAINT store_secret_name_unique IF NOT EXISTS
FOR (n:StoreSecret) REQUIRE n.name IS UNIQUE;

// Each persona's incarnation: API key grants name it, so a persona created later under the
// same id is never opened by an older key (`migrate` binds the keys made before).
MATCH (p:Persona)
WHERE p.incarnation IS NULL
SET p.incarnation = replace(randomUUID(), '-', '');
