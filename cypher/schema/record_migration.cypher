// Record one applied migration (its own transaction, after its DDL committed).
MERGE (m:Migration {version: $version})
SET m.name = $name,
    m.description = $description,
    m.checksum = $checksum,
    m.applied_at = datetime()
