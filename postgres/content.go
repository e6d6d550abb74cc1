package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agentrun/agentrun/content"
)

// Content is a content.Store in PostgreSQL: one row per blob, keyed by its
// content key.
type Content struct {
	db *DB
	// sealer, when not nil, encrypts blobs at rest.
	sealer content.Sealer
}

var _ content.Store = (*Content)(nil)

// Put stores data under its key. A row that already holds the key's bytes
// is left alone; one that holds other bytes (damage from outside) is
// replaced, so a Put repairs what Get reports as damaged.
func (c *Content) Put(ctx context.Context, data []byte) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	key := content.KeyOf(data)
	if c.sealer != nil {
		sealed, err := c.sealer.Seal(key, data)
		if err != nil {
			return "", fmt.Errorf("put %s: %w", key, err)
		}
		data = sealed
	}
	if data == nil {
		data = []byte{} // NOT NULL: the empty blob is an empty bytea
	}
	_, err := c.db.pool.Exec(ctx, `INSERT INTO agentrun_content (key, data) VALUES ($1, $2)
		ON CONFLICT (key) DO UPDATE SET data = EXCLUDED.data
		WHERE agentrun_content.data IS DISTINCT FROM EXCLUDED.data`, key, data)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return "", fmt.Errorf("put %s: %w", key, ctxErr)
		}
		return "", fmt.Errorf("put %s: %s: %w", key, c.db.target, err)
	}
	return key, nil
}

// Get returns the bytes stored under key, after checking that they hash to
// it.
func (c *Content) Get(ctx context.Context, key string) ([]byte, error) {
	if err := content.ValidKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var data []byte
	err := c.db.pool.QueryRow(ctx, `SELECT data FROM agentrun_content WHERE key = $1`, key).Scan(&data)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, fmt.Errorf("get %s: %w", key, content.ErrNotFound)
	case err != nil:
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("get %s: %w", key, ctxErr)
		}
		return nil, fmt.Errorf("get %s: %s: %w", key, c.db.target, err)
	}
	if data == nil {
		data = []byte{}
	}
	plain, err := content.Unseal(c.sealer, key, "the row", data)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(plain), nil
}
