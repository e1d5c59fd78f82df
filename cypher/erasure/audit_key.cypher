// The store's secret for audit subjects, made on first use (the name constraint makes
// concurrent first uses agree).
MERGE (k:StoreSecret {name: 'audit_key'})
ON CREATE SET k.value = $value
RETURN k.value AS value
