package codecserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	commonpb "go.temporal.io/api/common/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// MaxPayloads bounds the payloads of one request. The temporal CLI and
// the Web UI send the payloads of one field of one event (an input's
// arguments, a result, a query's answer) per call: one, or a few. A
// client that sent a whole page of history at once (at most 1,000
// events, each with a few payloads) stays well under it. The bytes alone
// do not bound the cost: an empty payload is 3 bytes in a body ("{},")
// and over 100 in memory, so one 64 MiB body of 22 million of them took
// the server to 3.3 GB.
const MaxPayloads = 10_000

// refusal is a request refused with its status and one line.
type refusal struct {
	code int
	text string
}

// readList reads a request's payload list: at most maxBody bytes and
// MaxPayloads payloads. The payloads are counted as the body is read,
// before any is built, so that a body of millions of them is refused
// having read a few kilobytes; a list within both bounds is then decoded
// by protojson, the one judge of its form.
func readList(w http.ResponseWriter, r *http.Request) (*commonpb.Payloads, *refusal) {
	var body bytes.Buffer
	in := http.MaxBytesReader(w, r.Body, maxBody)
	if countPayloads(io.TeeReader(in, &body)) > MaxPayloads {
		return nil, &refusal{http.StatusRequestEntityTooLarge, fmt.Sprintf("the request holds more than %d payloads (MaxPayloads): ask for fewer at a time", MaxPayloads)}
	}
	if _, err := io.Copy(&body, in); err != nil {
		code := http.StatusBadRequest
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			code = http.StatusRequestEntityTooLarge
		}
		return nil, &refusal{code, "read the body: " + oneLine(err.Error())}
	}
	var list commonpb.Payloads
	if err := protojson.Unmarshal(body.Bytes(), &list); err != nil {
		return nil, &refusal{http.StatusBadRequest, `not a payload list ({"payloads": [...]}): ` + oneLine(err.Error())}
	}
	return &list, nil
}

// countPayloads counts the elements of the body's "payloads" lists as it
// reads them, and stops at the first past MaxPayloads. It judges nothing
// else: on a body of another form it stops and leaves the verdict to
// protojson.
func countPayloads(body io.Reader) (n int) {
	dec := json.NewDecoder(body)
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return n
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return n
		}
		if key != "payloads" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return n
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('[') {
			return n
		}
		for dec.More() {
			if n++; n > MaxPayloads {
				return n
			}
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return n
			}
		}
		if _, err := dec.Token(); err != nil {
			return n
		}
	}
	return n
}
