package testenv

import (
	"net"
	"net/http"
	"sync"
	"testing"

	"go.temporal.io/sdk/converter"

	"github.com/agentrun/agentrun/codec"
)

// SuiteConverter is the data converter of SuiteCodec: a test that reads
// payloads of a run's history (results, inputs, search attributes)
// decodes them with it, so that it reads the same values with encryption
// on and off. Without SuiteKeys it is the sdk's default.
func SuiteConverter(t testing.TB) converter.DataConverter {
	t.Helper()
	cdc, err := SuiteCodec()
	if err != nil {
		t.Fatal(err)
	}
	return codec.DataConverter(cdc)
}

var (
	endpointOnce sync.Once
	endpoint     string
	endpointErr  error
)

// CodecEndpoint is the --codec-endpoint a temporal CLI command needs to
// read and send the payloads of runs under SuiteKeys, "" without them: a
// plain codec server (the sdk's handler over SuiteCodec, decrypting and
// encrypting, expanding nothing) on a loopback port, started once per test
// process and serving until it exits.
func CodecEndpoint(t testing.TB) string {
	t.Helper()
	if !Encrypted() {
		return ""
	}
	endpointOnce.Do(func() {
		cdc, err := SuiteCodec()
		if err != nil {
			endpointErr = err
			return
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			endpointErr = err
			return
		}
		go func() { _ = http.Serve(ln, converter.NewPayloadCodecHTTPHandler(cdc)) }()
		endpoint = "http://" + ln.Addr().String()
	})
	if endpointErr != nil {
		t.Fatalf("the suite's codec endpoint (%s): %v", SuiteKeys, endpointErr)
	}
	return endpoint
}
