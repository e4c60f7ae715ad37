//go:build !unix

package testbed

import "context"

// lockFile is a no-op where flock is unavailable: concurrent builders then both build, and the
// atomic rename keeps one complete result.
func lockFile(ctx context.Context, path string) (func(), error) { return func() {}, ctx.Err() }
