package streams

import (
	"encoding/base64"
	"errors"
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

// The protocol's handler names. A stream hosted by a Go, Python or
// TypeScript workflow answers to exactly these.
const (
	// PublishSignal appends a batch of items: a signal with a PublishInput.
	PublishSignal = "__temporal_workflow_stream_publish"
	// PollUpdate long-polls for items: an update with a PollInput,
	// answered with a PollResult.
	PollUpdate = "__temporal_workflow_stream_poll"
	// OffsetQuery answers the offset the next item will get (base offset
	// plus the length of the log), a JSON number.
	OffsetQuery = "__temporal_workflow_stream_offset"
)

// The application error types the protocol uses; subscribers in every
// language act on them.
const (
	// ErrTypeTruncatedOffset fails a poll whose from_offset (not 0) is below
	// the base offset. A subscriber starts again from offset 0, which means
	// "from the oldest item kept".
	ErrTypeTruncatedOffset = "TruncatedOffset"
	// ErrTypeTruncateOutOfRange is returned by Host.Truncate past the end.
	ErrTypeTruncateOutOfRange = "TruncateOutOfRange"
	// ErrTypeStreamDraining rejects a poll (in the update's validator, so
	// nothing is written to history) while the host drains before
	// continue-as-new or completion. A subscriber waits its cooldown and
	// polls again; the poll lands on the next run or finds the run closed.
	ErrTypeStreamDraining = "StreamDraining"
	// ErrTypeInvalidPoll rejects (in the validator) a poll with a negative
	// from_offset. It is this package's own; no upstream client sends one.
	ErrTypeInvalidPoll = "InvalidPollInput"
)

// BusyDetail is the detail of an ErrTypeStreamDraining refusal that a host
// sends because it holds HostConfig.MaxOpenPolls polls open already, not
// because it drains. Upstream subscribers read only the type (they wait
// their cooldown and poll again); the Subscriber here reads the detail and
// backs off longer (SubscriberConfig.BusyBackoff).
const BusyDetail = "busy"

// maxPollResponseBytes caps one poll answer, counted as the base64 length
// of each item's data plus its topic's length (the protocol's estimate):
// the answer stays below the 2 MiB payload limit. An answer stops before the
// item that would pass the cap and sets more_ready; a single item is always
// sent, whatever its size.
const maxPollResponseBytes = 1_000_000

// MaxItemBytes bounds the encoded size (base64 of the marshaled Payload)
// of one item that Host.Publish accepts: an item above it could not be
// answered to a poll within the server's 2 MiB payload limit. Items that
// arrive by signal are bounded by the server's 2 MiB signal limit instead.
const MaxItemBytes = maxPollResponseBytes

// PublishEntry is one item of a publish batch.
type PublishEntry struct {
	Topic string `json:"topic"`
	// Data is the standard (padded) base64 encoding of a marshaled
	// temporal.api.common.v1.Payload.
	Data string `json:"data"`
}

// PublishInput is the payload of PublishSignal.
type PublishInput struct {
	Items []PublishEntry `json:"items"`
	// PublisherID names the publisher for dedup; "" turns dedup off.
	PublisherID string `json:"publisher_id"`
	// Sequence numbers the publisher's batches from 1; a batch whose
	// sequence is not above the last one accepted from the same publisher
	// is a duplicate and dropped.
	Sequence int64 `json:"sequence"`
}

// PollInput is the argument of PollUpdate.
type PollInput struct {
	// Topics filters the items; empty means every topic.
	Topics []string `json:"topics"`
	// FromOffset is the global offset of the first item wanted; 0 means
	// the oldest item kept.
	FromOffset int64 `json:"from_offset"`
}

// WireItem is one item of a PollResult or of a State's log.
type WireItem struct {
	Topic string `json:"topic"`
	// Data is as in PublishEntry.
	Data string `json:"data"`
	// Offset is the item's global offset (0 in a State's log, where it is
	// base_offset plus the index).
	Offset int64 `json:"offset"`
}

// PollResult is the answer of PollUpdate.
type PollResult struct {
	Items []WireItem `json:"items"`
	// NextOffset is the from_offset of the subscriber's next poll.
	NextOffset int64 `json:"next_offset"`
	// MoreReady says the answer was cut at the size cap: poll again at once.
	MoreReady bool `json:"more_ready"`
}

// State is the stream carried across continue-as-new, in the protocol's
// shape (the TypeScript and Python packages use the same JSON).
type State struct {
	Log        []WireItem `json:"log"`
	BaseOffset int64      `json:"base_offset"`
	// PublisherSequences is the last sequence accepted per publisher id.
	PublisherSequences map[string]int64 `json:"publisher_sequences"`
	// PublisherLastSeen is when each publisher's last batch was accepted,
	// in Unix seconds (workflow time); publishers idle longer than the
	// host's PublisherTTL are left out of the next State.
	PublisherLastSeen map[string]float64 `json:"publisher_last_seen"`
}

// EncodePayload returns the wire form of a payload: the standard base64
// encoding of its protobuf serialization (deterministic, so the same payload
// always encodes the same).
func EncodePayload(p *commonpb.Payload) (string, error) {
	b, err := marshalPayload(p)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// marshalPayload is the deterministic protobuf serialization of a payload:
// what the host keeps of an item (entry), whose wire form is its base64.
func marshalPayload(p *commonpb.Payload) ([]byte, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("marshal payload: %w", err)
	}
	return b, nil
}

// errNoEncoding: a payload without encoding metadata cannot be decoded by
// any payload converter.
var errNoEncoding = errors.New("payload has no encoding metadata")

// DecodePayload parses the wire form of a payload. It accepts padded and
// unpadded base64 (the TypeScript decoder accepts both) and requires the
// payload to name its encoding.
func DecodePayload(s string) (*commonpb.Payload, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		var err2 error
		if b, err2 = base64.RawStdEncoding.DecodeString(s); err2 != nil {
			return nil, fmt.Errorf("data is not base64: %w", err)
		}
	}
	p := &commonpb.Payload{}
	if err := proto.Unmarshal(b, p); err != nil {
		return nil, fmt.Errorf("data is not a serialized Payload: %w", err)
	}
	if len(p.GetMetadata()[converter.MetadataEncoding]) == 0 {
		return nil, errNoEncoding
	}
	return p, nil
}

// itemSize is the protocol's estimate of an item's share of a poll answer:
// the length of its wire form (encodedLen) and of its topic.
func itemSize(encodedLen int, topic string) int { return encodedLen + len(topic) }
