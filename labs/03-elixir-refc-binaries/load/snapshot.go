package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// saveGet writes the body of GET url to path.
func saveGet(ctx context.Context, url, path string) error {
	return save(ctx, http.MethodGet, url, path)
}

// savePost writes the body of POST url (no request body) to path.
func savePost(ctx context.Context, url, path string) error {
	return save(ctx, http.MethodPost, url, path)
}

func save(ctx context.Context, method, url, path string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s", method, url, resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(path, body, 0o644)
}
