package main

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/codec"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/internal/codecserver"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/workflows"
)

// encryptParams sizes the encryption section.
type encryptParams struct {
	// Turns is how many tool-calling turns each run has; a final answer
	// follows.
	Turns int
	// Rounds is how many measured runs of each kind alternate, after one
	// warm-up run of each.
	Rounds int
	// ToolOutput is the size of each tool output in bytes: over the
	// inline limit, so that it is kept by reference.
	ToolOutput int
	// Decodes is how many times the codec server decodes the 100 events.
	Decodes int
}

// decodeEvents is how many events of a run's history the codec server
// decodes in one measurement (the "100-event history").
const decodeEvents = 100

// encryption runs the same AgentRun runs with a payload key (client,
// worker and content store) and without, alternating, and compares their
// time per activity and history bytes per turn; then it has the codec
// server decode the first 100 events of an encrypted run's history (with
// its references expanded) against the same events of a plain run.
func encryption(ctx context.Context, env *benchEnv, p encryptParams) ([]row, error) {
	sec := fmt.Sprintf("Encryption: AgentRun runs of %d turns with %d-byte tool outputs (kept by reference), with a payload key (AES-256-GCM over zlib; client, worker and content store) vs without, %d alternating rounds each",
		p.Turns, p.ToolOutput, p.Rounds)
	key := make([]byte, codec.KeySize)
	_, _ = crand.Read(key)
	cdc, err := codec.New([]codec.Key{{ID: "bench", Bytes: key}})
	if err != nil {
		return nil, err
	}
	var script llm.Script
	for i := 1; i <= p.Turns; i++ {
		script.Turns = append(script.Turns, llm.Turn{ToolCalls: []llm.ScriptedCall{{Name: "read_notes", Args: json.RawMessage(fmt.Sprintf(`{"line":%d}`, i))}}})
	}
	script.Turns = append(script.Turns, llm.Turn{Text: "Summary: the notes are read."})
	n := activityCount(p.Turns)
	// The encrypted side's codec and content sealing are timed, so that
	// the report shows how much of its step time is the codec's own work.
	var codecTime codecClock
	var sides [2]*pairSide
	for i, cdc := range []*codec.Codec{nil, cdc} {
		s := &pairSide{name: "plain", queue: "bench-plain-" + runStamp()}
		var err error
		if cdc != nil {
			s.name, s.queue = "encrypted", "bench-encrypted-"+runStamp()
			s.client, err = env.dialWith(nil, func(o *client.Options) {
				o.DataConverter, o.FailureConverter = codecTime.converter(cdc), codec.FailureConverter(cdc)
			})
		} else {
			s.client, err = env.dial(nil)
		}
		if err != nil {
			return nil, err
		}
		defer s.client.Close()
		dir := env.subdir("encryption-" + s.name)
		if cdc != nil {
			s.store, err = content.NewSealedFileStore(dir+"/content", codecTime.sealer(cdc))
		} else {
			s.store, err = content.NewFileStore(dir + "/content")
		}
		if err != nil {
			return nil, err
		}
		stop, err := startSide(env, s, dir, script, agentOptions{}, p.ToolOutput)
		if err != nil {
			return nil, err
		}
		defer stop()
		sides[i] = s
	}

	in := workflows.Input{Messages: agent.UserMessages("Read the support notes and sum them up."), MaxTurns: p.Turns + 1}
	if err := runPaired(ctx, "enc", sides, in, n, p.Rounds, codecTime.reset); err != nil {
		return nil, err
	}
	measured := len(sides[1].ids) * n
	plain, enc := sides[0], sides[1]
	rows := []row{{Section: sec, Figure: "ms per activity, encrypted vs plain (median of rounds)",
		Measured: ms(median(enc.times)), Baseline: ms(median(plain.times)), Unit: "ms", Goal: 1.05},
		{Section: sec, Figure: "ms per activity in the codec and the content store's sealing (encrypt, decrypt, compress), encrypted runs, vs plain step time",
			Measured: ms(codecTime.total() / time.Duration(measured)), Baseline: ms(median(plain.times)), Unit: "ms"}}

	// History bytes per turn, and the first 100 events of one run of each.
	var events [2][]*historypb.HistoryEvent
	var size [2]int
	for i, s := range sides {
		for j, id := range s.ids {
			it := s.client.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			for it.HasNext() {
				e, err := it.Next()
				if err != nil {
					return nil, fmt.Errorf("history of %s: %w", id, err)
				}
				size[i] += proto.Size(e)
				if j == 0 && len(events[i]) < decodeEvents {
					events[i] = append(events[i], e)
				}
			}
		}
	}
	turns := float64(len(plain.ids) * (p.Turns + 1))
	rows = append(rows, row{Section: sec, Figure: "history bytes per turn, encrypted vs plain",
		Measured: float64(size[1]) / turns, Baseline: float64(size[0]) / turns, Unit: "B"})

	// The codec server: one /decode of the events' payloads, as the Web UI
	// asks for a page of events, with each side's own content store.
	var took [2][]time.Duration
	var count [2]int
	var expanded [2]int
	for i, s := range sides {
		payloads := eventPayloads(events[i])
		count[i] = len(payloads)
		body, err := json.Marshal(&commonpb.Payloads{Payloads: payloads})
		if err != nil {
			return nil, err
		}
		// Each side's own codec server: the plain runs' has no keys (with
		// keys it would expand no reference of a payload that is not
		// encrypted), the encrypted runs' has theirs.
		o := codecserver.Options{Content: s.store}
		if i == 1 {
			o.Codec = cdc
		}
		h := codecserver.Handler(o)
		for k := 0; k <= p.Decodes; k++ {
			w := httptest.NewRecorder()
			start := time.Now()
			// As the Web UI's browser asks a codec server on loopback.
			h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8234/decode", bytes.NewReader(body)))
			d := time.Since(start)
			if w.Code != http.StatusOK {
				return nil, fmt.Errorf("codec server decode of %s: %d %s", s.ids[0], w.Code, strings.TrimSpace(w.Body.String()))
			}
			if k == 0 { // warm-up; count the references it expanded
				var got commonpb.Payloads
				if err := protojson.Unmarshal(w.Body.Bytes(), &got); err != nil {
					return nil, fmt.Errorf("codec server decode of %s: %w", s.ids[0], err)
				}
				for _, q := range got.GetPayloads() {
					expanded[i] += bytes.Count(q.GetData(), []byte(`"notes from line`))
				}
				continue
			}
			took[i] = append(took[i], d)
		}
	}
	rows = append(rows, row{Section: sec,
		Figure:   fmt.Sprintf("codec server: ms to decode the payloads of a run's first %d events (%d payloads, %d references expanded), encrypted vs plain, median of %d", len(events[1]), count[1], expanded[1], p.Decodes),
		Measured: ms(median(took[1])), Baseline: ms(median(took[0])), Unit: "ms"})
	if count[0] != count[1] || expanded[0] == 0 || expanded[0] != expanded[1] {
		return nil, fmt.Errorf("codec server: %d vs %d payloads, %d vs %d tool outputs readable; want the same events with their outputs", count[1], count[0], expanded[1], expanded[0])
	}
	return rows, nil
}

// eventPayloads collects every payload in events (inputs, results,
// failures' details, memo values), in order.
func eventPayloads(events []*historypb.HistoryEvent) []*commonpb.Payload {
	var out []*commonpb.Payload
	var walk func(m protoreflect.Message)
	walk = func(m protoreflect.Message) {
		if p, ok := m.Interface().(*commonpb.Payload); ok {
			out = append(out, p)
			return
		}
		m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case fd.IsList() && fd.Message() != nil:
				for i := range v.List().Len() {
					walk(v.List().Get(i).Message())
				}
			case fd.IsMap() && fd.MapValue().Message() != nil:
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					walk(mv.Message())
					return true
				})
			case fd.Message() != nil && !fd.IsList() && !fd.IsMap():
				walk(v.Message())
			}
			return true
		})
	}
	for _, e := range events {
		walk(e.ProtoReflect())
	}
	return out
}

// codecClock adds up the time a codec and a content sealer spend, from
// any number of goroutines.
type codecClock struct{ ns atomic.Int64 }

func (k *codecClock) since(start time.Time) { k.ns.Add(int64(time.Since(start))) }
func (k *codecClock) total() time.Duration  { return time.Duration(k.ns.Load()) }
func (k *codecClock) reset()                { k.ns.Store(0) }

// converter is codec.DataConverter(c) with c's time counted.
func (k *codecClock) converter(c *codec.Codec) converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), timedCodec{c, k})
}

// sealer is c as a content store's sealer with its time counted.
func (k *codecClock) sealer(c *codec.Codec) content.Sealer { return timedSealer{c, k} }

type timedCodec struct {
	c converter.PayloadCodec
	k *codecClock
}

func (t timedCodec) Encode(p []*commonpb.Payload) ([]*commonpb.Payload, error) {
	defer t.k.since(time.Now())
	return t.c.Encode(p)
}

func (t timedCodec) Decode(p []*commonpb.Payload) ([]*commonpb.Payload, error) {
	defer t.k.since(time.Now())
	return t.c.Decode(p)
}

type timedSealer struct {
	s content.Sealer
	k *codecClock
}

func (t timedSealer) Seal(addr string, plain []byte) ([]byte, error) {
	defer t.k.since(time.Now())
	return t.s.Seal(addr, plain)
}

func (t timedSealer) Open(addr string, sealed []byte) ([]byte, error) {
	defer t.k.since(time.Now())
	return t.s.Open(addr, sealed)
}
