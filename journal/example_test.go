package journal_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/journal"
)

func ExampleFileStore() {
	dir, err := os.MkdirTemp("", "journal-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	store, err := journal.NewFileStore(dir)
	if err != nil {
		log.Fatal(err)
	}
	// Append after the records seen: none for a new run.
	err = store.Append("run-1", 0, journal.Record{Type: journal.RunStarted, Input: agent.UserMessages("hello")})
	if err != nil {
		log.Fatal(err)
	}
	err = store.Append("run-1", 1,
		journal.Record{Type: journal.StepStarted, Step: "model/1", Kind: agent.KindModel},
		journal.Record{Type: journal.StepCompleted, Step: "model/1", Result: []byte(`{"message":{"role":"assistant","content":"hi"}}`)},
	)
	if err != nil {
		log.Fatal(err)
	}
	// An append by someone who has not seen the last records is refused.
	err = store.Append("run-1", 1, journal.Record{Type: journal.RunCompleted, Answer: "hi"})
	fmt.Println("stale append:", errors.Is(err, journal.ErrConflict))

	recs, err := store.Load("run-1")
	if err != nil {
		log.Fatal(err)
	}
	for _, rec := range recs {
		if rec.Step != "" {
			fmt.Println(rec.Type, rec.Step)
		} else {
			fmt.Println(rec.Type)
		}
	}
	ids, err := store.List()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("runs:", ids)

	// On disk: one line per record, a CRC-32C of the JSON, then the JSON.
	b, err := os.ReadFile(filepath.Join(dir, "run-1.jsonl"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(b))
	// Output:
	// stale append: true
	// run.started
	// step.started model/1
	// step.completed model/1
	// runs: [run-1]
	// 23abd875 {"type":"run.started","input":[{"role":"user","content":"hello"}]}
	// cb6523fc {"type":"step.started","step":"model/1","kind":"model"}
	// bceab206 {"type":"step.completed","step":"model/1","result":{"message":{"role":"assistant","content":"hi"}}}
}
