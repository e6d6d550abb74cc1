// Package operator is the operator contract of agentrun, for both engines
// (the Temporal workflow and the local engine): the names of the signals
// and updates a person sends a run (approve, deny, reconcile, budget,
// message), their JSON payloads, the checks an input must pass, and how an
// input that passed them applies to a run's facts.
//
// The contract in one place:
//
//   - Names: [SignalApprove], [SignalDeny], [SignalReconcile],
//     [SignalBudget], [SignalMessage] (also the update names), listed in
//     order by [Signals]; a reconcile's outcome is [OutcomeDone] or
//     [OutcomeRetry]; a run id is checked by [ValidRunID]; the search
//     attributes a Temporal run keeps current are [StatusAttribute] and
//     [StepAttribute], holding an agent.Status and the step it waits on.
//   - Payloads: [Signal] is an input as both engines record it (the local
//     journal's signal record is its JSON); [Decode] reads the payload a
//     Temporal client sent for one operation, refusing a field of another
//     operation as unknown; [Format] says what a valid one looks like;
//     [ApprovePayload] and its siblings build them.
//   - Checks, in two steps: [CheckShape], the input alone, where it
//     arrives and before anything is recorded (it needs no run); then
//     [Check], the decision against where the run stands, over a [Stand]
//     that each engine fills from its own records. A refused input gets an
//     error that wraps [ErrInvalid] and says what would be valid; nothing
//     changes.
//   - Effect: [Target.Apply] records an input that passed in a run's facts:
//     a decision, a reconciliation, new limits, or a message for the next
//     model step. The Temporal workflow applies every input this way; the
//     local engine folds its journal's signal records through it, and keeps a
//     reconciliation by its step as well (its done result is recorded as
//     the step's step.completed when the run goes on).
//   - Expiry: [Expiry] is the approval-timeout rule of both engines: when
//     a pending call's clock starts (its model step's completion), its
//     [Deadline], which calls expired at a time, and the first deadline
//     (the engines' wake-up); [ExpiredDeny] is the engine's typed denial
//     ([Signal].Expired, refused from operators), [ReadOldDeny] and
//     [ReadOldDecisions] read records written before the flag.
//
// Both engines refuse every input once a run ended ([Ended]). An unknown
// run is [ErrUnknownRun]; a run id given with another prompt than the one
// the run started with is [ErrInputMismatch].
//
// The package depends on package agent only: it knows neither Temporal nor
// the journal's records.
package operator
