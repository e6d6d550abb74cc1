package agent

import "time"

// ActivitySpec says how a run schedules an activity tool's activity: a
// Temporal activity registered on a worker of its own, which a call runs
// as that activity rather than inside the engine's tool step. A run
// records it in its tool list, so every worker schedules a call alike.
type ActivitySpec struct {
	// Name is the activity type the call schedules.
	Name string `json:"name"`
	// TaskQueue is the queue it is scheduled on; "" for the run's own.
	TaskQueue string `json:"task_queue,omitempty"`
	// StartToClose bounds one attempt; it is the tool's timeout.
	StartToClose time.Duration `json:"start_to_close"`
	// ScheduleToStart bounds the wait for a worker to take an attempt; 0
	// for no bound. An attempt that was never taken did not run.
	ScheduleToStart time.Duration `json:"schedule_to_start,omitempty"`
	// Heartbeat is the attempt's heartbeat timeout; 0 for none.
	Heartbeat time.Duration `json:"heartbeat,omitempty"`
	// Retry is the retry policy of a read or of a write that is safe to
	// run again; nil for Temporal's default. A write that is not is
	// scheduled for one attempt, whatever this says.
	Retry *ActivityRetry `json:"retry,omitempty"`
}

// ActivityRetry is an activity tool's retry policy, as Temporal's.
type ActivityRetry struct {
	InitialInterval    time.Duration `json:"initial_interval,omitempty"`
	BackoffCoefficient float64       `json:"backoff_coefficient,omitempty"`
	MaximumInterval    time.Duration `json:"maximum_interval,omitempty"`
	MaximumAttempts    int32         `json:"maximum_attempts,omitempty"`
	NonRetryable       []string      `json:"non_retryable,omitempty"`
}
