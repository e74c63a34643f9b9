package ui

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"mlxchat/engine"
	"mlxchat/safefile/safefiletest"
)

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	f := false
	tests := []struct {
		name     string
		path     string
		explicit bool
		want     Config
		wantErr  string
	}{
		{"missing default", filepath.Join(dir, "absent.json"), false, Config{}, ""},
		{"missing explicit", filepath.Join(dir, "absent.json"), true, Config{}, "absent.json: no such file"},
		{"empty", write("empty.json", "\n"), true, Config{}, ""},
		{"full", write("full.json", `{"theme":"light","autosave":false,"history_limit":9,"paste_min_chars":50,"paste_min_lines":3}`), true,
			Config{Theme: "light", Autosave: &f, HistoryLimit: 9, PasteMinChars: 50, PasteMinLines: 3}, ""},
		{"unknown field", write("typo.json", `{"them":"light"}`), true, Config{}, `unknown key "them" (known keys: theme, autosave`},
		{"not json", write("bad.json", `theme = "light"`), true, Config{}, "line 1, column 2: invalid character 'h' in literal true"},
		{"syntax on line 3", write("comma.json", "{\n \"theme\": \"light\",\n}"), true, Config{}, "line 3, column 1"},
		{"cut short", write("short.json", `{"theme": "light"`), true, Config{}, "ends early"},
		{"wrong type", write("type.json", `{"top_k": "many"}`), true, Config{}, `"top_k" is a JSON string, want a whole number`},
		{"bad setting", write("kv.json", `{"max_kv_size": -1}`), true, Config{}, "kv.json: max_kv_size -1: want 0 (off)"},
		{"bad chunk", write("chunk.json", `{"prefill_chunk_size": 0}`), true, Config{}, "prefill_chunk_size 0: want a positive"},
		{"bad kv_bits", write("bits.json", `{"kv_bits": 4}`), true, Config{}, "bits.json: kv_bits 4: want 32 (float32), 16 (float16) or 8 (int8)"},
		{"kv_bits 0", write("bits0.json", `{"kv_bits": 0}`), true, Config{}, "kv_bits 0: want 32 (float32), 16 (float16) or 8 (int8)"},
		{"kv_bits text", write("bitstext.json", `{"kv_bits": "8"}`), true, Config{}, `"kv_bits" is a JSON string, want a whole number`},
		{"kv_bits 8", write("bits8.json", `{"kv_bits": 8}`), true, Config{}, ""},
		{"trailing data", write("two.json", `{} {}`), true, Config{}, "unexpected data after"},
		{"negative", write("neg.json", `{"history_limit":-1}`), true, Config{}, "must be >= 0"},
	}
	for _, tc := range tests {
		got, err := LoadConfig(tc.path, tc.explicit)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err %v, want %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got.Theme != tc.want.Theme || got.HistoryLimit != tc.want.HistoryLimit || got.PasteMinChars != tc.want.PasteMinChars ||
			got.PasteMinLines != tc.want.PasteMinLines || (got.Autosave == nil) != (tc.want.Autosave == nil) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
	d := Config{}.withDefaults()
	if !*d.Autosave || d.HistoryLimit != 500 || d.PasteMinChars != 1000 || d.PasteMinLines != 8 {
		t.Errorf("defaults: %+v", d)
	}
}

func TestAutosaveOffWritesNothing(t *testing.T) {
	m, fe := newTestModel(t, func(c *modelConfig) {
		off := false
		c.cfg.Autosave = &off
	})
	ready(m)
	send(t, m, fe, "secret")
	m.finish()
	if files, _ := filepath.Glob(filepath.Join(m.files.stateDir, "conversations", "*")); len(files) != 0 {
		t.Errorf("autosave off still wrote %v", files)
	}
	typeText(m, "/save")
	press(m, tea.KeyEnter)
	if !strings.Contains(screen(m), "/save: autosave is off, expected a FILE name") {
		t.Errorf("/save without autosave:\n%s", screen(m))
	}
}

func TestConversationFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "c.json")
	c := conversationFile{Model: "m", Created: t0, Updated: t0.Add(time.Minute), System: "sys",
		Messages: []savedMessage{{Role: "user", Content: "full", Display: "short"}, {Role: "assistant", Content: "ans", Partial: true}},
		Draft:    "d", DraftPastes: []pasteBlock{{Label: "[pasted: 1 token, 1 B]", Content: "x"}}}
	if err := saveConversation(p, c); err != nil {
		t.Fatal(err)
	}
	got, err := loadConversation(p)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 1 || got.System != "sys" || len(got.Messages) != 2 || got.Messages[0].Display != "short" ||
		!got.Messages[1].Partial || got.DraftPastes[0].Content != "x" || !got.Updated.Equal(c.Updated) {
		t.Errorf("round trip: %+v", got)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, "sub", ".*tmp*")); len(leftovers) != 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
	bad := []struct{ body, want string }{
		{`{`, "not a conversation file"},
		{`{"version": 9, "messages": []}`, "version 9, expected at most 1"},
		{`{"version": 1, "messages": [{"role": "tool", "content": "x"}]}`, `message 1 has role "tool"`},
	}
	for _, b := range bad {
		q := filepath.Join(dir, "bad.json")
		os.WriteFile(q, []byte(b.body), 0o600)
		if _, err := loadConversation(q); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("load %s: err %v, want %q", b.body, err, b.want)
		}
	}
	if _, err := loadConversation(filepath.Join(dir, "none.json")); err == nil || !strings.Contains(err.Error(), "none.json") {
		t.Errorf("missing file error does not name it: %v", err)
	}
}

func TestResolveConversationPath(t *testing.T) {
	tests := []struct{ name, want string }{
		{"notes", "/state/notes.json"},
		{"notes.json", "/state/notes.json"},
		{"./notes", "./notes.json"},
		{"/tmp/x.txt", "/tmp/x.txt"},
		{"sub/y", "sub/y.json"},
	}
	for _, tc := range tests {
		if got := resolveConversationPath("/state", tc.name); got != tc.want {
			t.Errorf("resolve(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestCreateConversationFile(t *testing.T) {
	dir := t.TempDir()
	c := conversationFile{Messages: []savedMessage{{Role: "user", Content: "hi"}}}
	a, err := createConversationFile(dir, t0, c, saveConversation)
	if err != nil {
		t.Fatal(err)
	}
	b, err := createConversationFile(dir, t0, c, saveConversation)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(a) != "2025-03-01T12-00-00.json" || filepath.Base(b) != "2025-03-01T12-00-00-2.json" {
		t.Errorf("paths %s, %s", a, b)
	}
	if got := readConv(t, b); len(got.Messages) != 1 {
		t.Errorf("new file holds %+v", got)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	// A state dir that is a regular file fails at once (it used to loop).
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, []byte("x"), 0o600)
	if _, err := createConversationFile(filepath.Join(file, "conversations"), t0, c, saveConversation); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("create under a file: %v", err)
	}
}

func TestHistoryFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "h.json")
	var entries []historyEntry
	for i := 0; i < 10; i++ {
		entries = append(entries, historyEntry{Text: strings.Repeat("x", i+1)})
	}
	if err := saveHistory(p, entries, 3); err != nil {
		t.Fatal(err)
	}
	got, err := loadHistory(p)
	if err != nil || len(got) != 3 || got[2].Text != entries[9].Text {
		t.Errorf("history: %v %+v", err, got)
	}
	if h, err := loadHistory(p + ".missing"); err != nil || h != nil {
		t.Errorf("missing history: %v %v", h, err)
	}
	big := []historyEntry{{Text: "a"}, {Text: "b", Pastes: []pasteBlock{{Content: strings.Repeat("y", 300<<10)}}}}
	if d := historyForDisk(big); len(d) != 1 || d[0].Text != "a" {
		t.Errorf("huge paste kept on disk: %d entries", len(d))
	}
}

// TestConfigSettings: the file's generation defaults land on the settings;
// absent keys keep the base values.
func TestConfigSettings(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.json")
	body := `{"max_kv_size": 2048, "prefill_chunk_size": 256, "sink_tokens": 8, "keep_system": true, "temp": 0.7,
		"top_p": 0.9, "top_k": 40, "min_p": 0.05, "repetition_penalty": 1.1, "repetition_window": 32,
		"seed": 9, "max_tokens": 100, "no_loop_detect": true, "kv_bits": 8, "system": "be brief", "stop": ["END"]}`
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(p, true)
	if err != nil {
		t.Fatal(err)
	}
	got := c.Settings(engine.DefaultSettings())
	want := engine.Settings{MaxKV: 2048, PrefillChunk: 256, SinkTokens: 8, KeepSystem: true, Temperature: 0.7,
		TopP: 0.9, TopK: 40, MinP: 0.05, RepetitionPenalty: 1.1, RepetitionWindow: 32, Seed: 9, MaxTokens: 100,
		NoLoopDetect: true, KVBits: 8, System: "be brief", StopStrings: []string{"END"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("settings\n got %+v\nwant %+v", got, want)
	}
	base := engine.DefaultSettings()
	base.Temperature = 0.3
	if got := (Config{Theme: "light"}).Settings(base); !reflect.DeepEqual(got, base) {
		t.Fatalf("a config without settings changed them: %+v", got)
	}
}

// TestSaveTheme: the theme is written into the config file, keeping the
// other keys; a missing file and folder are created; a broken file is not
// overwritten.
func TestSaveTheme(t *testing.T) {
	dir := t.TempDir()
	t.Run("keeps other keys", func(t *testing.T) {
		p := filepath.Join(dir, "keep.json")
		os.WriteFile(p, []byte(`{"theme": "dark", "max_kv_size": 512, "system": "hi"}`), 0o600)
		if err := SaveTheme(p, "light"); err != nil {
			t.Fatal(err)
		}
		c, err := LoadConfig(p, true)
		if err != nil {
			t.Fatal(err)
		}
		if c.Theme != "light" || c.MaxKV == nil || *c.MaxKV != 512 || c.System == nil || *c.System != "hi" {
			t.Fatalf("after SaveTheme: %+v", c)
		}
		if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
			t.Fatalf("mode %v, want the file's 0600 kept", st.Mode().Perm())
		}
	})
	t.Run("creates", func(t *testing.T) {
		p := filepath.Join(dir, "new", "sub", "config.json")
		if err := SaveTheme(p, "high-contrast"); err != nil {
			t.Fatal(err)
		}
		if c, err := LoadConfig(p, true); err != nil || c.Theme != "high-contrast" {
			t.Fatalf("created config: %+v, %v", c, err)
		}
	})
	t.Run("broken file left alone", func(t *testing.T) {
		p := filepath.Join(dir, "broken.json")
		os.WriteFile(p, []byte(`{"theme": `), 0o600)
		err := SaveTheme(p, "light")
		if err == nil || !strings.Contains(err.Error(), "broken.json is not a JSON object") {
			t.Fatalf("err %v", err)
		}
		if b, _ := os.ReadFile(p); string(b) != `{"theme": ` {
			t.Fatalf("broken file rewritten: %q", b)
		}
	})
}

// TestThemeCommandPersists: /theme NAME switches and saves the theme; the
// next Run starts with it.
func TestThemeCommandPersists(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config.json")
	os.WriteFile(p, []byte(`{"autosave": false}`), 0o600)
	m, _ := newTestModel(t, func(c *modelConfig) { c.cfgPath = p })
	ready(m)
	typeText(m, "/theme light")
	press(m, tea.KeyEnter)
	if m.theme.Name != "light" || !strings.Contains(screen(m), "theme light (saved to") {
		t.Fatalf("theme %s, screen:\n%s", m.theme.Name, screen(m))
	}
	c, err := LoadConfig(p, true)
	if err != nil || c.Theme != "light" || c.Autosave == nil || *c.Autosave {
		t.Fatalf("config after /theme: %+v, %v", c, err)
	}
	// A bad name changes nothing and writes nothing.
	typeText(m, "/theme neon")
	press(m, tea.KeyEnter)
	if c2, _ := LoadConfig(p, true); c2.Theme != "light" || m.theme.Name != "light" {
		t.Fatalf("bad /theme changed things: file %q, theme %q", c2.Theme, m.theme.Name)
	}
	// A config folder that cannot be written: the theme still switches,
	// the error says it was not saved.
	ro := filepath.Join(t.TempDir(), "file")
	os.WriteFile(ro, nil, 0o600)
	m2, _ := newTestModel(t, func(c *modelConfig) { c.cfgPath = filepath.Join(ro, "config.json") })
	ready(m2)
	typeText(m2, "/theme light")
	press(m2, tea.KeyEnter)
	if s := screen(m2); m2.theme.Name != "light" || !strings.Contains(s, "/theme: theme light is on, but not saved") {
		t.Fatalf("unwritable config: theme %s, screen:\n%s", m2.theme.Name, s)
	}
}

// TestSaveTargets: /save FILE writes a new file in an existing folder
// (".json" added) or over a regular file as named; a missing folder, a
// directory, a device or a FIFO is one error line naming the path, and
// nothing is created or renamed (/dev/full never becomes /dev/full.json).
func TestSaveTargets(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "notes")
	os.WriteFile(plain, []byte("old"), 0o600)
	tests := []struct{ arg, wrote, err string }{
		{filepath.Join(dir, "new"), filepath.Join(dir, "new.json"), ""},
		{plain, plain, ""},
		{filepath.Join(dir, "missing", "deeper", "x.json"), "", "/save: no folder " + filepath.Join(dir, "missing", "deeper") + " for " + filepath.Join(dir, "missing", "deeper", "x.json") + " (create it first)"},
		{filepath.Join(plain, "x.json"), "", "/save: " + filepath.Join(plain, "x.json") + ": " + plain + " is not a folder"},
		{dir, "", "/save: " + dir + " is a directory, expected a regular file or a new file name"},
		{"/dev/full", "", "/save: /dev/full is a character device, expected a regular file or a new file name"},
		{fifo, "", "/save: " + fifo + " is a named pipe (FIFO), expected a regular file or a new file name"},
	}
	for _, tc := range tests {
		t.Run(filepath.Base(tc.arg), func(t *testing.T) {
			m, fe := newTestModel(t)
			update(m, tea.WindowSizeMsg{Width: 300, Height: 30})
			ready(m)
			_, id := send(t, m, fe, "hi")
			events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneStop, Text: "Hello."})
			command(m, "/save "+tc.arg)
			n := noticeOf(screen(m))
			if tc.err != "" {
				if n != "✗ "+tc.err+recallHint {
					t.Errorf("notice %q, want %q", n, tc.err)
				}
				if _, err := os.Stat(tc.arg + ".json"); err == nil {
					t.Errorf("%s.json was created", tc.arg)
				}
				if _, err := os.Stat(filepath.Join(dir, "missing")); err == nil {
					t.Error("/save created the missing folder")
				}
				return
			}
			if n != "• saved to "+tc.wrote {
				t.Errorf("notice %q, want saved to %s", n, tc.wrote)
			}
			if c := readConv(t, tc.wrote); len(c.Messages) != 2 || c.Messages[1].Content != "Hello." {
				t.Errorf("%s holds %+v", tc.wrote, c.Messages)
			}
		})
	}
}

// TestHostileStateFiles: the config file and the input history are read
// as /load reads a conversation: only a regular file of bounded size, and
// without blocking. QA: "mlxchat run --config /dev/zero" died "fatal
// error: out of memory", "--config FIFO" hung (SIGTERM could not end it),
// and a history.json that was a FIFO or a link to /dev/zero hung or
// crashed the chat at start. Each is now one error line naming the file.
func TestHostileStateFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.json")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.json")
	if err := os.WriteFile(huge, []byte("{"+strings.Repeat(" ", 2<<20)+"}"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path           string
		wantConfig, wantHist string
	}{
		{"FIFO", fifo, "config file " + fifo + " is a named pipe (FIFO), expected a regular file",
			"loading input history: " + fifo + " is a named pipe (FIFO), expected a regular file"},
		{"/dev/zero", zero, "config file " + zero + " is a character device, expected a regular file",
			"loading input history: " + zero + " is a character device, expected a regular file"},
		{"directory", dir, "config file " + dir + " is a directory, expected a regular file",
			"loading input history: " + dir + " is a directory, expected a regular file"},
		{"over 1 MiB of config", huge, "config file " + huge + " is 2.0 MiB, expected at most 1.0 MiB", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := safefiletest.Within(t, "LoadConfig", 10*time.Second, func() error { _, err := LoadConfig(tc.path, false); return err })
			if err == nil || err.Error() != tc.wantConfig {
				t.Errorf("LoadConfig: %v, want %q", err, tc.wantConfig)
			}
			if tc.wantHist == "" {
				return
			}
			err = safefiletest.Within(t, "loadHistory", 10*time.Second, func() error { _, err := loadHistory(tc.path); return err })
			if err == nil || err.Error() != tc.wantHist {
				t.Errorf("loadHistory: %v, want %q", err, tc.wantHist)
			}
		})
	}
}

// TestCorruptHistoryIsKept: a history.json the chat cannot read is moved
// aside before the session writes its first entry (QA: a corrupt history
// was reported, then replaced by the first new entry, and everything typed
// before was gone); when it cannot be moved, the session saves no history
// and the file stays as it was.
func TestCorruptHistoryIsKept(t *testing.T) {
	now := time.Date(2026, 12, 4, 19, 30, 0, 0, time.UTC)
	const corrupt = `{"entries":[{"text":"an old question"},`
	tests := []struct {
		name     string
		rename   func(from, to string) error
		wantSave bool
		wantErr  string
	}{
		{"moved aside", os.Rename, true, "kept it as "},
		{"cannot move", func(string, string) error { return errors.New("read-only file system") }, false,
			"this session does not save its input history, so that file is left as it is (moving it aside: read-only file system)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "history.json")
			if err := os.WriteFile(path, []byte(corrupt), 0o600); err != nil {
				t.Fatal(err)
			}
			entries, save, err := openHistory(path, now, tc.rename)
			if err == nil || !strings.Contains(err.Error(), "loading input history "+path) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want the file named and %q", err, tc.wantErr)
			}
			if len(entries) != 0 || save != tc.wantSave {
				t.Fatalf("entries %v save %v, want none and %v", entries, save, tc.wantSave)
			}
			keptAt := path
			if save {
				keptAt = path + ".bad-20261204-193000"
				if err := saveHistory(path, []historyEntry{{Text: "a new question"}}, 10); err != nil {
					t.Fatal(err)
				}
			}
			if data, err := os.ReadFile(keptAt); err != nil || string(data) != corrupt {
				t.Errorf("the old history at %s reads %q (%v), want it as it was", keptAt, data, err)
			}
		})
	}
	// A good history opens as it is, and nothing is moved.
	path := filepath.Join(t.TempDir(), "history.json")
	if err := saveHistory(path, []historyEntry{{Text: "kept"}}, 10); err != nil {
		t.Fatal(err)
	}
	entries, save, err := openHistory(path, now, func(string, string) error { t.Fatal("renamed a good history"); return nil })
	if err != nil || !save || len(entries) != 1 || entries[0].Text != "kept" {
		t.Errorf("good history: %v %v %v", entries, save, err)
	}
}

// TestWriteFileAtomicErrorNamesTheFile: a failed save names the file the
// user knows, not the temporary file it was written through (QA: "writing
// X.json: write .X.json.tmp-1-2: no space left on device"). The write is
// made to fail by a file size limit (RLIMIT_FSIZE, SIGXFSZ ignored: EFBIG,
// as a full disk gives ENOSPC) in a child process, so the limit binds
// nothing else of the test binary.
func TestWriteFileAtomicErrorNamesTheFile(t *testing.T) {
	if dir := os.Getenv("MLXCHAT_FSIZE_CHILD"); dir != "" {
		signal.Ignore(syscall.SIGXFSZ)
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 4096, Max: 4096}); err != nil {
			fmt.Println("setrlimit:", err)
			os.Exit(3)
		}
		err := writeFileAtomic(filepath.Join(dir, "chat.json"), make([]byte, 64<<10), 0o700, 0o600)
		fmt.Printf("ERR=%v\n", err)
		os.Exit(0)
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWriteFileAtomicErrorNamesTheFile$")
	cmd.Env = append(os.Environ(), "MLXCHAT_FSIZE_CHILD="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	want := "ERR=writing " + filepath.Join(dir, "chat.json") + ": file too large\n"
	if got := string(out); !strings.Contains(got, want) {
		t.Errorf("child printed %q, want the line %q", got, want)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}
