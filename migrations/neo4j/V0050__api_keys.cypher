// API keys of the HTTP server: the public id and the SHA-256 of the secret, never the
// secret.
CREATE CONSTRAINT api_key_id_unique IF NOT EXISTS
FOR (n:ApiKey) REQUIRE n.id IS UNIQUE;
