// Package config is the configuration of agentrun's programs (worker,
// starter, reconcile): one documented struct, Config, and the one function
// that reads the environment, Load. A main calls Load(os.Getenv) once and
// passes the Config (or plain values from it) down; no other package of
// the programs reads an environment variable.
//
// Load asks getenv for every name in Names, once, and nothing else. It
// then parses each value (its form: a Go duration, a positive number, a
// file it names), fills the defaults of what is unset (withDefaults) and
// checks the rules between settings (validate): the models file has an
// entry for the model, the provider's account settings are usable, a build
// id needs a deployment. Every refusal is an *Error whose text is one line
// that names the variable, says what was wrong and what is valid; the
// programs exit with their settings exit code on it (cli.ExitSettings, 2).
//
// A provider's key is the one setting Load does not require: keys live in
// the workers' environment only, and programs that never call the model
// (reconcile, a starter of a Temporal run) run without them. The programs
// that do build the model refuse a missing key the same way, as an *Error.
//
// The encryption keys (AGENTRUN_CODEC_KEYS, or the file
// AGENTRUN_CODEC_KEY_FILE names) become Config.Codec, checked at Load: a
// key that is not 32 bytes, a malformed file, two keys with one id, or
// both variables set are each an *Error naming the variable and, where
// there is one, the key id, never a key's bytes.
//
// Temporal's client settings (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
// TEMPORAL_API_KEY, TEMPORAL_TLS_*, TEMPORAL_CONFIG_FILE,
// TEMPORAL_PROFILE) are not agentrun's: the sdk's envconfig reads them
// when a program dials (internal/cluster), as Temporal's own tools do.
//
// The Test section holds test-only hooks (hold points inside writes, a
// deliberate workflow change). Tests set them as AGENTRUN_TEST_ variables
// of the worker and starter processes they crash, so they go through Load
// like every other setting; the programs carry them in the context of the
// executor and the activities, and pick the workflow by them (package
// internal/testhook), never through a public type. Production leaves them
// unset.
//
// docs/configuration.md is the reference: its test fails when it lists a
// variable that Names does not, or misses one that Names has, and when a
// program's package reads the environment outside this package.
package config
