package models

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"mlxchat/safefile/safefiletest"
	"mlxchat/tensor/cpu"
)

// TestHostileModelFiles: a file of a model directory that is a named
// pipe, a link to /dev/zero or a directory makes the load (and Check, and
// CheckConfig for config.json) fail at once with one line naming the
// file. QA: a FIFO tokenizer.json, tokenizer_config.json,
// generation_config.json, index or chat template hung `mlxchat run`
// (reading waits for a writer; SIGTERM could not end it), and a link to
// /dev/zero ran memory out ("fatal error: out of memory").
func TestHostileModelFiles(t *testing.T) {
	be := cpu.New(1)
	defer be.Close()
	kinds := []struct {
		name, want string
		make       func(t *testing.T, p string)
	}{
		{"fifo", "is a named pipe (FIFO), expected a regular file", func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"zero", "is a character device, expected a regular file", func(t *testing.T, p string) {
			if err := os.Symlink("/dev/zero", p); err != nil {
				t.Fatal(err)
			}
		}},
		{"dir", "is a directory, expected a regular file", func(t *testing.T, p string) {
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
	}
	files := []string{"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
		"chat_template.jinja", "chat_template.json", "model.safetensors.index.json", "model-00002-of-00002.safetensors"}
	for _, file := range files {
		for _, k := range kinds {
			t.Run(file+"/"+k.name, func(t *testing.T) {
				dir := brokenModel{family: "llama", bits: 4}.write(t)
				p := filepath.Join(dir, file)
				os.Remove(p)
				k.make(t, p)
				want := p + " " + k.want
				for what, f := range map[string]func() error{
					"load":  func() error { return loadAll(dir, be) },
					"check": func() error { return Check(dir, be) },
				} {
					if err := within(t, what, f); err == nil || err.Error() != want {
						t.Errorf("%s: %v, want %q", what, err, want)
					}
				}
				if file == "config.json" {
					if err := within(t, "CheckConfig", func() error { return CheckConfig(p) }); err == nil || err.Error() != want {
						t.Errorf("CheckConfig: %v, want %q", err, want)
					}
				}
			})
		}
	}
}

// within fails the test if f takes more than 20 s (a load blocked on a
// named pipe never returns).
func within(t *testing.T, what string, f func() error) error {
	t.Helper()
	return safefiletest.Within(t, what, 20*time.Second, f)
}

// TestCheckFileSize: a file read whole that is larger than any real one
// is refused by its size before it is read.
func TestCheckFileSize(t *testing.T) {
	p := filepath.Join(t.TempDir(), "tokenizer.json")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(maxSideFileBytes + 1); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	f.Close()
	if err := checkFile(p, maxSideFileBytes); err == nil || !strings.HasSuffix(err.Error(), "is 536870913 bytes, expected at most 536870912") {
		t.Fatalf("checkFile: %v", err)
	}
	if err := checkFile(filepath.Join(t.TempDir(), "absent.json"), maxSideFileBytes); err != nil {
		t.Fatalf("absent file: %v", err)
	}
}
