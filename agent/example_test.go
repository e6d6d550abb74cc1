package agent_test

import (
	"fmt"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/content"
)

// An answer has one TextKey whether it is carried inline or by reference.
func ExampleMessage_TextKey() {
	text := "Refunded order A-1001."
	inline := agent.Message{Role: agent.RoleAssistant, Content: text}
	byRef := agent.Message{Role: agent.RoleAssistant, ContentRef: &agent.Ref{
		Key: content.KeyOf([]byte(text)), Size: len(text), Preview: text,
	}}
	other := agent.Message{Role: agent.RoleAssistant, Content: "Refunded order A-1002."}
	fmt.Println(inline.TextKey())
	fmt.Println(inline.TextKey() == byRef.TextKey(), inline.TextKey() == other.TextKey())
	// Output:
	// sha256:62bb12bfa7bb2b5bcf129038fac7702ac3001e0f061dadf6d5fa518780e2c14d
	// true false
}

// Recorded drops the inline copy of a text kept by reference.
func ExampleMessage_Recorded() {
	text := "Refunded order A-1001."
	ref := &agent.Ref{Key: content.KeyOf([]byte(text)), Size: len(text), Preview: text}
	both := agent.Message{Role: agent.RoleAssistant, Content: text, ContentRef: ref}
	rec := both.Recorded()
	fmt.Printf("content %q, text %q, same key %v\n", rec.Content, rec.Text(), rec.TextKey() == both.TextKey())
	inline := agent.Message{Role: agent.RoleAssistant, Content: text}
	fmt.Printf("content %q\n", inline.Recorded().Content)
	// Output:
	// content "", text "Refunded order A-1001.", same key true
	// content "Refunded order A-1001."
}
