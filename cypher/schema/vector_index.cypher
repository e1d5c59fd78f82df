// The configuration of one vector index (no row when it does not exist).
SHOW VECTOR INDEXES
YIELD name, state, labelsOrTypes, properties, options
WHERE name = $name
RETURN state,
       labelsOrTypes AS labels,
       properties,
       options.indexConfig['vector.dimensions'] AS dimensions,
       options.indexConfig['vector.similarity_function'] AS similarity_function
