package streams_test

import (
	"fmt"

	"go.temporal.io/sdk/converter"

	"github.com/agentrun/agentrun/streams"
)

// The wire form of an item: base64 of the serialized Payload, which keeps
// the payload's encoding for the subscriber's converter.
func ExampleEncodePayload() {
	p, _ := converter.GetDefaultDataConverter().ToPayload("a")
	data, _ := streams.EncodePayload(p)
	fmt.Println(data)
	back, _ := streams.DecodePayload(data)
	fmt.Printf("%s %s\n", back.GetMetadata()["encoding"], back.GetData())
	// Output:
	// ChYKCGVuY29kaW5nEgpqc29uL3BsYWluEgMiYSI=
	// json/plain "a"
}
