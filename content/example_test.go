package content_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/agentrun/agentrun/content"
)

func ExampleFileStore() {
	dir, err := os.MkdirTemp("", "content-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	store, err := content.NewFileStore(dir)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	key, err := store.Put(ctx, []byte("hello, world"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(key)

	data, err := store.Get(ctx, key)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s\n", data)

	_, err = store.Get(ctx, content.KeyOf([]byte("never stored")))
	fmt.Println("not found:", errors.Is(err, content.ErrNotFound))
	_, err = store.Get(ctx, "sha256:../../etc/passwd")
	fmt.Println(err)

	// On disk: one file per blob, sharded by the first two hex digits.
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			fmt.Println(filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// sha256:09ca7e4eaa6e8ae9c7d261167129184883644d07dfba7cbfbc4c8a2e08360d5b
	// hello, world
	// not found: true
	// invalid content key "sha256:../../etc/passwd" (23 bytes): want "sha256:" followed by 64 lowercase hex digits
	// 09/ca7e4eaa6e8ae9c7d261167129184883644d07dfba7cbfbc4c8a2e08360d5b
}
