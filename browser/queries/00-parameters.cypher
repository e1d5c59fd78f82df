// 00 Choose the persona, topic and user (run first)
// Browser commands, not Cypher: run this first (edit the values), then any other query.
:param persona => 'ada';
:param topic => 'nuclear_power';
:param user => 'sam';
