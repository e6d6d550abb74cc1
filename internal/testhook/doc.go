// Package testhook carries the programs' test-only hooks to the code they
// act in, so that no public type has a field for them. The hooks are
// internal/config's Test section, which tests set as AGENTRUN_TEST_*
// variables in the environment of the worker and starter processes they
// crash; production leaves every hook at its zero value, which is inert.
//
// They travel in the context. The worker puts them in the context its
// activities start from (worker.Options.BackgroundActivityContext), the
// local engine in the context of its Drive; With leaves a context without
// hooks as it is, so production pays one context lookup per tool step. No
// package-level state: two workers in one test process keep their own.
//
// Hold is the hold point inside a write, which package execute calls on
// both engines; package activities holds ListTools itself (it needs the
// activity's info), on Hooks.HoldList. The
// deliberate workflow change (Hooks.WorkflowChange) is package wfchange's,
// which links the Temporal workflow package that execute must not.
package testhook
