// Package frontdoor carries what agentrun's own programs register with
// that package agentrun's Config does not offer a team: the environment's
// executor settings, the tools file's agent depth and tool order (which
// keep the catalogs of runs that older builds started), the activities'
// names of older builds and the test-only workflow change. It is the one
// seam between the programs and agentrun.Register, so the programs register
// through the front door without these settings in its public API. The
// tools file's agents are ordinary agentrun.Agents of the programs' Config.
//
// Package agentrun sets Attach when it is initialised; package fromenv,
// which builds an agentrun.Config from the programs' environment, calls it.
package frontdoor
