// Package devserver starts the pinned Temporal CLI's dev server the way
// agentrun's tests and its bench need it: headless (or, with StartWith, with
// its Web UI on a given port and a codec endpoint for it), in memory (or,
// with StartWith, on a SQLite file that survives a restart on the same port),
// on a free loopback port, with the search attributes AgentRunStatus, AgentRunStep and AgentRunForkOf
// (Keyword), and with the dynamic config that every dev server the project
// starts carries (DynamicConfig: without it a dev server waits ~90 ms per
// activity on its own rate limit; shared/TEMPORAL_NOTES.md, "Dev-server
// latency").
//
// The same values are in scripts/dev-server.sh (make demo, make dev-server)
// and in the compose cluster's deploy/dynamicconfig; tests check that they
// agree with DynamicConfig.
package devserver
