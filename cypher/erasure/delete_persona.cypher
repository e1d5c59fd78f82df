// Remove a persona and every node it owns (its Erasure records stay).
MATCH (p:Persona {id: $persona_id})
CALL (p) { MATCH (n:Episode {persona_id: p.id}) DETACH DELETE n }
CALL (p) { MATCH (n:Snapshot {persona_id: p.id}) DETACH DELETE n }
CALL (p) { MATCH (n:User {persona_id: p.id}) DETACH DELETE n }
CALL (p) { MATCH (n:Conversation {persona_id: p.id}) DETACH DELETE n }
CALL (p) { MATCH (n:Belief {persona_id: p.id}) DETACH DELETE n }
CALL (p) { MATCH (n:Topic {persona_id: p.id}) DETACH DELETE n }
CALL (p) { MATCH (n:StagedUpdate {persona_id: p.id}) DETACH DELETE n }
CALL (p) { MATCH (n:Insight {persona_id: p.id}) DETACH DELETE n }
CALL (p) { MATCH (n:UserFact {persona_id: p.id}) DETACH DELETE n }
CALL (p) { MATCH (n:Reflection {persona_id: p.id}) DETACH DELETE n }
CALL (p) { MATCH (n:ReflectionLease {persona_id: p.id}) DETACH DELETE n }
CALL (p) { MATCH (n:Narrative {persona_id: p.id}) DETACH DELETE n }
CALL (p) { MATCH (n:MonologueEntry {persona_id: p.id}) DETACH DELETE n }
CALL (p) { MATCH (n:AffectState {persona_id: p.id}) DETACH DELETE n }
CALL (p) { MATCH (n:TurnUsage {persona_id: p.id}) DETACH DELETE n }
CALL (p) { MATCH (n:BiographyEntry {persona_id: p.id}) DETACH DELETE n }
DETACH DELETE p
RETURN count(*) AS deleted
