package main

import "time"

// The sizes of a bench run: full, and -quick.

// params are the sizes of one bench run.
type params struct {
	steps    stepParams
	journal  journalParams
	long     longParams
	stream   streamParams
	tokens   tokenParams
	guard    guardParams
	kill     killParams
	settle   settleParams
	parked   parkedParams
	encrypt  encryptParams
	trace    traceParams
	deleg    delegatedParams
	lib      libraryParams
	prov     providerParams
	fleetLim fleetLimitParams
	satur    saturationParams
	fork     forkParams
	actions  actionsParams
	batch    approvalBatchParams
	fleet    approvalBatchParams // the approval section at fleet scale
	// fsyncSamples is how many write+fsync probes the machine's fsync floor
	// takes its median over.
	fsyncSamples int
}

func paramsFor(quick bool) params {
	if quick {
		return params{
			steps:        stepParams{Turns: 3, Rounds: 2},
			journal:      journalParams{Appends: 10, Small: 10, Large: 4000, Steps: 5},
			long:         longParams{Turns: 30, ToolOutput: 4096},
			stream:       streamParams{Turns: 2, Delay: 3 * time.Second},
			tokens:       tokenParams{Runs: 2, Delay: 3 * time.Second},
			guard:        guardParams{Steps: 10},
			kill:         killParams{Trials: 1, Delay: 2 * time.Second},
			settle:       settleParams{Trials: 1, ToolTimeout: 10 * time.Second},
			parked:       parkedParams{Runs: 50, Parallel: 8},
			encrypt:      encryptParams{Turns: 3, Rounds: 2, ToolOutput: 4096, Decodes: 5},
			trace:        traceParams{Turns: 3, Rounds: 2},
			deleg:        delegatedParams{Rounds: 2},
			lib:          libraryParams{Turns: 3, Rounds: 2},
			prov:         providerParams{Steps: 50},
			fleetLim:     fleetLimitParams{Runs: 40, Turns: 3, Workers: 4, RPM: 60, TPM: 40000, Window: 6 * time.Second},
			satur:        saturationParams{Runs: 20, Turns: 3, Rounds: 1, Parallel: 8},
			fork:         forkParams{Turns: 100, Near: 10, Far: 90, Rounds: 2},
			actions:      actionsParams{Turns: 3, StreamTurns: 2, Delay: 3 * time.Second},
			batch:        approvalBatchParams{Runs: 20, Parallel: 8, Upserts: true},
			fleet:        approvalBatchParams{Runs: 10, Parallel: 8, RSSBudget: 500, Label: "Parked runs at fleet scale"},
			fsyncSamples: 20,
		}
	}
	return params{
		steps:        stepParams{Turns: 25, Rounds: 50},
		journal:      journalParams{Appends: 200, Small: 10, Large: 4000, Steps: 50},
		long:         longParams{Turns: 1000, ToolOutput: 4096},
		stream:       streamParams{Turns: 8, Delay: 3 * time.Second},
		tokens:       tokenParams{Runs: 10, Delay: 3 * time.Second},
		guard:        guardParams{Steps: 200},
		kill:         killParams{Trials: 3, Delay: 2 * time.Second},
		settle:       settleParams{Trials: 3, ToolTimeout: 10 * time.Second},
		parked:       parkedParams{Runs: 1000, Parallel: 8},
		encrypt:      encryptParams{Turns: 25, Rounds: 40, ToolOutput: 4096, Decodes: 50},
		trace:        traceParams{Turns: 25, Rounds: 20},
		deleg:        delegatedParams{Rounds: 20},
		lib:          libraryParams{Turns: 25, Rounds: 30},
		prov:         providerParams{Steps: 50},
		fleetLim:     fleetLimitParams{Runs: 200, Turns: 10, Workers: 4, RPM: 60, TPM: 40000, Window: 6 * time.Second},
		satur:        saturationParams{Runs: 500, Turns: 10, Rounds: 2, Parallel: 16},
		fork:         forkParams{Turns: 1000, Near: 10, Far: 900, Rounds: 10},
		actions:      actionsParams{Turns: 25, StreamTurns: 4, Delay: 3 * time.Second},
		batch:        approvalBatchParams{Runs: 1000, Parallel: 8, Upserts: true},
		fleet:        approvalBatchParams{Runs: 10000, Parallel: 16, RSSBudget: 500, Label: "Parked runs at fleet scale"},
		fsyncSamples: 200,
	}
}
