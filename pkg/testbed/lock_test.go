//go:build unix

package testbed

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// A second builder waits for the first: the lock is held per open file, so this holds across
// processes as well as within one.
func TestLockFileExcludesSecondHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	release, err := lockFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := lockFile(ctx, path); err == nil {
		t.Fatal("second holder got the lock while the first held it")
	}
	release()
	again, err := lockFile(context.Background(), path)
	if err != nil {
		t.Fatalf("lock not free after release: %v", err)
	}
	again()
}
