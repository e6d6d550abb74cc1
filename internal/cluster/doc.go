// Package cluster connects agentrun's programs to a Temporal cluster: a
// client configured the way Temporal's own tools are (TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, the TLS variables and profiles of
// the sdk's envconfig), and the search attributes every run keeps current,
// registered when missing.
package cluster
