package safefiletest

import (
	"testing"
	"time"
)

// Within runs f and returns its error, failing the test (named by what)
// if f has not returned after limit. f keeps running then: a read blocked
// on a named pipe cannot be stopped from outside.
func Within(t testing.TB, what string, limit time.Duration, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		t.Fatalf("%s hangs", what)
		return nil
	}
}
