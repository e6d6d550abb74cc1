// Package cluster connects agentrun's programs to a Temporal cluster: a
// client configured the way Temporal's own tools are (TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, the TLS variables and profiles of
// the sdk's envconfig), and the search attributes every run keeps current,
// registered when missing.
//
// With a codec (config.Config's Codec, from AGENTRUN_CODEC_KEYS or
// AGENTRUN_CODEC_KEY_FILE), Dial's client encrypts every payload and every
// failure's message and stack trace it and its workers send, and
// decrypts what they receive (package codec). Without one the client is
// the sdk's default, as before. Code that reads payloads from a history
// or a description by hand decodes them with Conn.Converter.
//
// Dial's client gzips its gRPC calls, the sdk's default, unless
// config.Config's GRPCCompression (AGENTRUN_GRPC_COMPRESSION=none) turns
// that off.
//
// With tracing on (config.Config's Tracing), the programs pass the sdk's
// tracing interceptor to Dial: the client carries a run's trace context in
// the headers of what it starts and signals, and the workers built from it
// continue that trace in the workflow and its activities (package
// plumbing/tracing/export). Off, Dial adds no interceptor.
package cluster
