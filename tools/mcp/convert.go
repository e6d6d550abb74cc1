package mcp

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrun/agentrun/agent"
)

// toolSpec turns a listed MCP tool into the spec the model and the policy
// see.
func toolSpec(t *sdk.Tool) (agent.ToolSpec, error) {
	if !agent.ValidToolName(t.Name) {
		// list leaves such a tool out before it gets here.
		return agent.ToolSpec{}, fmt.Errorf("the name is not a tool name: want %s", agent.ToolNameRule)
	}
	spec := agent.ToolSpec{
		Name:        t.Name,
		Description: t.Description,
		Kind:        agent.KindWrite, // anything not annotated read-only has side effects
	}
	if spec.Description == "" {
		spec.Description = t.Title
	}
	if a := t.Annotations; a != nil {
		if spec.Description == "" {
			spec.Description = a.Title
		}
		if a.ReadOnlyHint {
			spec.Kind = agent.KindRead
		} else {
			spec.Idempotent = a.IdempotentHint
		}
	}
	if t.InputSchema != nil {
		// The client decodes the schema into a map; encoding it again sorts
		// its keys, so the spec is the same bytes on every worker.
		b, err := json.Marshal(t.InputSchema)
		if err != nil {
			return agent.ToolSpec{}, fmt.Errorf("input schema: %w", err)
		}
		spec.Schema = b
		if spec.Kind == agent.KindWrite {
			spec.IdempotencyKey = keyArg(b)
		}
	}
	return spec, nil
}

// KeyArgs are the argument names that declare an idempotency key by name.
var KeyArgs = []string{"idempotency_key", "idempotencyKey"}

// KeyMark is the schema keyword that declares an idempotency key on any
// string argument: "x-idempotency-key": true.
const KeyMark = "x-idempotency-key"

// keyArg returns the argument of an input schema that takes an idempotency
// key by the convention (see the package documentation), or "".
func keyArg(schema []byte) string {
	var s struct {
		Properties map[string]struct {
			Type any  `json:"type"`
			Mark bool `json:"x-idempotency-key"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return ""
	}
	var names []string
	for name, p := range s.Properties {
		if p.Mark || (slices.Contains(KeyArgs, name) && (p.Type == nil || p.Type == "string")) {
			names = append(names, name)
		}
	}
	if len(names) != 1 {
		return "" // none, or not one clear argument
	}
	return names[0]
}

// toolResult renders a tool result as text for the model: each content
// block on its own line (text as is, other blocks as one line of JSON with
// binary data left out), then the structured content as JSON unless a text
// block already holds the same JSON value.
func toolResult(res *sdk.CallToolResult) agent.ToolResult {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, jsonText(binaryBlock{Type: "image", MIMEType: c.MIMEType, Bytes: len(c.Data)}))
		case *sdk.AudioContent:
			parts = append(parts, jsonText(binaryBlock{Type: "audio", MIMEType: c.MIMEType, Bytes: len(c.Data)}))
		case *sdk.ResourceLink:
			parts = append(parts, jsonText(resourceLink{
				Type: "resource_link", URI: c.URI, Name: c.Name, Title: c.Title,
				Description: c.Description, MIMEType: c.MIMEType, Size: c.Size,
			}))
		case *sdk.EmbeddedResource:
			r := embeddedResource{Type: "resource"}
			if c.Resource != nil {
				r.URI, r.MIMEType, r.Text = c.Resource.URI, c.Resource.MIMEType, c.Resource.Text
				if len(c.Resource.Blob) > 0 {
					n := len(c.Resource.Blob)
					r.BlobBytes = &n
				}
			}
			parts = append(parts, jsonText(r))
		default:
			b, err := c.MarshalJSON()
			if err != nil {
				b = []byte(fmt.Sprintf(`{"type":%q}`, fmt.Sprintf("%T", c)))
			}
			parts = append(parts, string(b))
		}
	}
	if res.StructuredContent != nil && !textHolds(res.Content, res.StructuredContent) {
		parts = append(parts, jsonText(res.StructuredContent))
	}
	return agent.ToolResult{Content: strings.Join(parts, "\n"), IsError: res.IsError}
}

// binaryBlock is how an image or audio block reaches the model: its type,
// media type and size, without the data.
type binaryBlock struct {
	Type     string `json:"type"`
	MIMEType string `json:"mimeType,omitempty"`
	Bytes    int    `json:"bytes"`
}

type resourceLink struct {
	Type        string `json:"type"`
	URI         string `json:"uri"`
	Name        string `json:"name,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
	Size        *int64 `json:"size,omitempty"`
}

type embeddedResource struct {
	Type      string `json:"type"`
	URI       string `json:"uri,omitempty"`
	MIMEType  string `json:"mimeType,omitempty"`
	Text      string `json:"text,omitempty"`
	BlobBytes *int   `json:"blobBytes,omitempty"` // size of a binary resource, whose data is left out
}

// jsonText encodes v on one line; map keys come out sorted.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%q", fmt.Sprint(v))
	}
	return string(b)
}

// textHolds reports whether a text block is the JSON encoding of v, as the
// spec asks servers that return structured content to provide.
func textHolds(content []sdk.Content, v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	var want any
	if json.Unmarshal(b, &want) != nil {
		return false
	}
	for _, c := range content {
		t, ok := c.(*sdk.TextContent)
		if !ok {
			continue
		}
		var got any
		if json.Unmarshal([]byte(t.Text), &got) == nil && reflect.DeepEqual(got, want) {
			return true
		}
	}
	return false
}
