package streams_test

import (
	"encoding/json"
	"testing"

	"github.com/agentrun/agentrun/streams"
)

// TestEnvelopeJSON: the envelopes marshal with the protocol's field names
// exactly (as in @temporalio/workflow-streams src/types.ts).
func TestEnvelopeJSON(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		v    any
		want string
	}{
		{streams.PublishInput{Items: []streams.PublishEntry{{Topic: "events", Data: "AA=="}}, PublisherID: "p", Sequence: 3},
			`{"items":[{"topic":"events","data":"AA=="}],"publisher_id":"p","sequence":3}`},
		{streams.PollInput{Topics: []string{}, FromOffset: 7}, `{"topics":[],"from_offset":7}`},
		{streams.PollResult{Items: []streams.WireItem{{Topic: "t", Data: "AA==", Offset: 7}}, NextOffset: 8, MoreReady: true},
			`{"items":[{"topic":"t","data":"AA==","offset":7}],"next_offset":8,"more_ready":true}`},
		{streams.State{Log: []streams.WireItem{{Topic: "t", Data: "AA=="}}, BaseOffset: 2,
			PublisherSequences: map[string]int64{"p": 1}, PublisherLastSeen: map[string]float64{"p": 1.5}},
			`{"log":[{"topic":"t","data":"AA==","offset":0}],"base_offset":2,"publisher_sequences":{"p":1},"publisher_last_seen":{"p":1.5}}`},
	} {
		b, err := json.Marshal(c.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("%T:\n got %s\nwant %s", c.v, b, c.want)
		}
	}
}

// TestStateReadsTypeScriptState: a State written by the TypeScript
// package's getState() (offsets 0, timestamps with fractions) decodes.
func TestStateReadsTypeScriptState(t *testing.T) {
	t.Parallel()
	const ts = `{"log":[{"topic":"status","data":"ChYKCGVuY29kaW5nEgpqc29uL3BsYWluEgMiYSI=","offset":0}],"base_offset":4,"publisher_sequences":{"ab12":2},"publisher_last_seen":{"ab12":1764590000.123}}`
	var s streams.State
	if err := json.Unmarshal([]byte(ts), &s); err != nil {
		t.Fatal(err)
	}
	if s.BaseOffset != 4 || len(s.Log) != 1 || s.PublisherSequences["ab12"] != 2 || s.PublisherLastSeen["ab12"] != 1764590000.123 {
		t.Fatalf("decoded %+v", s)
	}
	if _, err := streams.DecodePayload(s.Log[0].Data); err != nil {
		t.Fatal(err)
	}
}
