package ui

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var updateScreen = flag.Bool("update-screen", false, "TestTmux: write the captured screen to testdata/screen.txt and the README's capture")

// TestTmux runs the real binary in a tmux terminal with a tiny synthetic
// Gemma 3n model (models/cmd/mkmodel) and a tiny word-level tokenizer:
// it types a message, pastes a long document under a small --max-kv-size,
// checks that tokens stream and the meter shows trims, sends /kv 64, pins
// the trimmed first message, switches to 8-bit KV, stops a long prefill
// with Esc and quits with Ctrl+C twice.
func TestTmux(t *testing.T) {
	bin, modelDir, tmuxBin := realChat(t)
	work := t.TempDir()

	sock := fmt.Sprintf("mlxchat-test-%d", os.Getpid())
	tm := &tmux{t: t, bin: tmuxBin, sock: sock, target: "chat"}
	t.Cleanup(func() { _ = exec.Command(tmuxBin, "-L", sock, "kill-server").Run() })
	state, cfgHome := filepath.Join(work, "state"), filepath.Join(work, "config")
	cmdline := fmt.Sprintf("env XDG_STATE_HOME=%q XDG_CONFIG_HOME=%q NO_COLOR=1 TERM=xterm-256color %q --max-kv-size 48 --prefill-chunk-size 16 --max-tokens 40 --temp 0.7 --seed 7 %q; echo \"[exit $?]\"; sleep 600",
		state, cfgHome, bin, modelDir)
	tm.run("new-session", "-d", "-s", "chat", "-x", "120", "-y", "32", "sh", "-c", cmdline)

	tm.waitFor("the chat to open", 60*time.Second, func(s string) bool { return strings.Contains(s, "is ready") })

	// 1. A typed message: the answer streams (decode speed, seen tokens).
	tm.keys("-l", "Hello there")
	tm.keys("Enter")
	tm.waitFor("the first answer", 60*time.Second, func(s string) bool {
		return strings.Contains(s, "decode ") && !strings.Contains(s, "Esc stop")
	})
	scr := tm.capture()
	if m := meterRE.FindStringSubmatch(scr); m == nil || atoi(m[3]) == 0 {
		t.Fatalf("meter shows no tokens after the first answer:\n%s", scr)
	}

	// 2. /kv 64 changes the cap shown in the meter.
	tm.keys("-l", "/kv 64")
	tm.keys("Enter")
	tm.waitFor("/kv 64 in the meter", 10*time.Second, func(s string) bool {
		return strings.Contains(s, "/64 live") && strings.Contains(s, "kv cap 64")
	})

	// 3. A long paste collapses, is sent whole, and the meter shows trims.
	doc := longDocument(3000)
	tm.paste(filepath.Join(work, "doc.txt"), doc)
	tm.waitFor("the collapsed paste", 10*time.Second, func(s string) bool {
		return regexp.MustCompile(`\[pasted: [0-9,]+ tokens, 3 KiB\]`).MatchString(s)
	})
	// It does not fit the live window: the fit check holds it with the
	// numbers, and a second Enter sends it anyway.
	tm.keys("Enter")
	tm.waitFor("the fit check's notice", 30*time.Second, func(s string) bool {
		return regexp.MustCompile(`✂ paste [0-9,]+ tokens > live window 64: the model would see only the last [0-9,]+\. Enter sends anyway · /summarize summarizes it in pieces · /kv [0-9]+ raises the cap \(≈ [0-9.]+ [KMG]?i?B of KV\)`).MatchString(flat(s))
	})
	tm.keys("Enter")
	sawPrefill := false
	tm.waitFor("trims after the long paste", 120*time.Second, func(s string) bool {
		sawPrefill = sawPrefill || strings.Contains(s, "prefill ")
		m := meterRE.FindStringSubmatch(s)
		return m != nil && atoi(m[3]) >= 3000 && atoi(m[4]) > 0 && !strings.Contains(s, "Esc stop")
	})
	scr = tm.capture()
	m := meterRE.FindStringSubmatch(scr)
	if live, max := atoi(m[1]), m[2]; max != "64" || live > 64 {
		t.Errorf("live window %d/%s after trims, want at most 64/64:\n%s", live, max, scr)
	}
	if seen := atoi(m[3]); seen < 3000 {
		t.Errorf("meter saw %d tokens, want the whole paste (>= 3000):\n%s", seen, scr)
	}
	if !sawPrefill {
		t.Log("prefill progress was never captured (prefill was faster than the poll)")
	}
	// The screen is a golden (testdata/screen.txt, also the README's
	// capture), once the trim flash is over.
	tm.waitFor("the trim flash to end", 10*time.Second, func(s string) bool {
		lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
		return !strings.Contains(lines[len(lines)-1], "✂")
	})
	checkScreenGolden(t, trimScreen(tm.capture()))

	// 4. /pin 1 pins the trimmed first message (its label says so) and
	// /kv bits 8 switches the cache to 8 bits; the next request (below)
	// restarts the cache with both.
	tm.keys("-l", "/pin 1")
	tm.keys("Enter")
	tm.waitFor("the pin", 10*time.Second, func(s string) bool {
		return strings.Contains(flat(s), "message #1 pinned: it was trimmed") && strings.Contains(s, "you · pinned · trimmed")
	})
	tm.keys("-l", "/kv bits 8")
	tm.keys("Enter")
	tm.waitFor("/kv bits 8", 10*time.Second, func(s string) bool { return strings.Contains(s, "KV cache 8-bit") })

	// 5. Esc stops a long prefill between chunks; the message is kept.
	tm.keys("-l", "/chunk 4")
	tm.keys("Enter")
	tm.paste(filepath.Join(work, "doc2.txt"), longDocument(20000))
	tm.keys("Enter")
	tm.waitFor("the fit check's notice", 30*time.Second, func(s string) bool { return strings.Contains(s, "Enter sends anyway") })
	tm.keys("Enter")
	tm.waitFor("a prefill in progress", 30*time.Second, func(s string) bool { return strings.Contains(s, "prefill ") })
	tm.keys("Escape")
	// Esc during prefill stops before the answer begins: the message (with
	// its collapsed paste) goes back into the editor, and prefill ends.
	tm.waitFor("the stop", 30*time.Second, func(s string) bool {
		return strings.Contains(s, "stopped before the answer began; your message is back in the editor")
	})
	if s := tm.capture(); !regexp.MustCompile(`› \[pasted: [0-9,]+ tokens, 20 KiB\]`).MatchString(s) || strings.Contains(s, "prefill ") || strings.Contains(s, "Esc stop") {
		t.Errorf("after Esc the paste is not back in the editor, or prefill goes on:\n%s", s)
	}

	// 6. Ctrl+C twice quits with status 0.
	tm.keys("C-c")
	tm.keys("C-c")
	tm.waitFor("the program to exit", 15*time.Second, func(s string) bool { return strings.Contains(s, "[exit ") })
	if s := tm.capture(); !strings.Contains(s, "[exit 0]") {
		t.Errorf("mlxchat did not exit cleanly:\n%s", s)
	}
	files, _ := filepath.Glob(filepath.Join(state, "mlxchat", "conversations", "*.json"))
	if len(files) != 1 {
		t.Fatalf("autosaved conversations: %v", files)
	}
	c := readConv(t, files[0])
	if len(c.Messages) < 4 || c.Messages[2].Content != doc {
		t.Errorf("autosave lacks the turns or the exact paste: %d messages", len(c.Messages))
	}
	if len(c.Messages) > 0 && !c.Messages[0].Pinned {
		t.Error("autosave lost the pin of message #1")
	}
}

// meterRE matches "kv ▕...▏ LIVE/MAX live · SEEN seen · TRIMMED trimmed".
var meterRE = regexp.MustCompile(`kv ▕[^▏]*▏ (\d+)/(\d+|∞) live · (\d+) seen · (\d+) trimmed`)

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// tmux drives one tmux session on a private server socket.
type tmux struct {
	t                 *testing.T
	bin, sock, target string
}

func (x *tmux) run(args ...string) string {
	x.t.Helper()
	out, err := exec.Command(x.bin, append([]string{"-L", x.sock}, args...)...).CombinedOutput()
	if err != nil {
		x.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (x *tmux) keys(args ...string) {
	x.t.Helper()
	x.run(append([]string{"send-keys", "-t", x.target}, args...)...)
	time.Sleep(30 * time.Millisecond)
}

// paste loads text into a tmux buffer and pastes it with bracketed-paste
// markers, as a terminal does for a clipboard paste.
func (x *tmux) paste(file, text string) {
	x.t.Helper()
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		x.t.Fatal(err)
	}
	x.run("load-buffer", "-b", "doc", file)
	x.run("paste-buffer", "-p", "-r", "-b", "doc", "-t", x.target)
}

func (x *tmux) capture() string {
	x.t.Helper()
	return x.run("capture-pane", "-p", "-t", x.target)
}

func (x *tmux) waitFor(what string, d time.Duration, ok func(string) bool) {
	x.t.Helper()
	deadline := time.Now().Add(d)
	var s string
	for time.Now().Before(deadline) {
		s = x.capture()
		if ok(s) {
			return
		}
		if strings.Contains(s, "[exit ") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	x.t.Fatalf("timed out waiting for %s; screen:\n%s", what, s)
}

func trimScreen(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n") + "\n"
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// longDocument returns about n bytes of plain prose in paragraphs.
func longDocument(n int) string {
	words := strings.Fields("the cache keeps a sink of early tokens and the most recent window so a long " +
		"document can be read in chunks while the meter shows how many tokens were trimmed")
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString(words[i%len(words)])
		switch {
		case i%97 == 96:
			b.WriteString(".\n\n")
		case i%13 == 12:
			b.WriteString(".\n")
		default:
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// writeTinyTokenizer writes a Gemma-style tokenizer (SentencePiece BPE, no
// merges) whose 512 ids fit the tiny model's vocabulary: specials at Gemma's
// ids (<eos> 1, <bos> 2, <start_of_turn> 105, <end_of_turn> 106), "▁", "\n"
// and the printable ASCII characters (so ASCII text encodes to one token per
// byte), and English words filling the other ids, so that the random model's
// answers decode to readable word salad rather than stray bytes.
func writeTinyTokenizer(t *testing.T, dir string) (tokJSON, tokCfg string) {
	t.Helper()
	const vocabSize = 512
	vocab := map[string]int{}
	var added []map[string]any
	special := func(id int, s string) {
		vocab[s] = id
		added = append(added, map[string]any{"id": id, "content": s, "single_word": false, "lstrip": false,
			"rstrip": false, "normalized": false, "special": true})
	}
	special(0, "<pad>")
	special(1, "<eos>")
	special(2, "<bos>")
	special(3, "<unk>")
	special(105, "<start_of_turn>")
	special(106, "<end_of_turn>")
	var pieces []string
	pieces = append(pieces, "▁", "\n")
	for c := '!'; c <= '~'; c++ {
		pieces = append(pieces, string(c))
	}
	words := strings.Fields(`the a of to and in is it that for on with as was at by this be from or an are
		cache window token tokens model prompt answer chunk chunks trim trimmed sink live seen memory layer
		layers attention key keys value values query mask position rope decode prefill sample greedy
		terminal screen meter paste document line lines word words text stream frame render markdown
		quick brown fox jumps over lazy dog river mountain forest city light dark night day morning
		small large long short fast slow new old first last next every each some many few more most
		read write load save send stop keep drop show hide open close start end begin finish run walk
		because while when where which there here then than so but not no yes very also just only`)
	for _, w := range words {
		pieces = append(pieces, "▁"+w)
	}
	for _, w := range words {
		pieces = append(pieces, "▁"+strings.ToUpper(w[:1])+w[1:])
	}
	for _, w := range words {
		pieces = append(pieces, w+".")
	}
	id := 4
	for _, p := range pieces {
		if _, dup := vocab[p]; dup {
			continue
		}
		for id == 105 || id == 106 {
			id++
		}
		if id >= vocabSize {
			break
		}
		vocab[p] = id
		id++
	}
	for ; id < vocabSize; id++ {
		if id != 105 && id != 106 {
			vocab[fmt.Sprintf("<unused%d>", id)] = id
		}
	}
	tok := map[string]any{
		"version":        "1.0",
		"truncation":     nil,
		"padding":        nil,
		"added_tokens":   added,
		"normalizer":     map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"},
		"pre_tokenizer":  map[string]any{"type": "Split", "pattern": map[string]any{"String": " "}, "behavior": "MergedWithPrevious", "invert": false},
		"post_processor": nil,
		"decoder": map[string]any{"type": "Sequence", "decoders": []any{
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": "▁"}, "content": " "},
			map[string]any{"type": "Fuse"},
		}},
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": "<unk>", "continuing_subword_prefix": nil,
			"end_of_word_suffix": nil, "fuse_unk": true, "byte_fallback": false, "ignore_merges": false,
			"vocab": vocab, "merges": []string{}},
	}
	cfg := map[string]any{
		"add_bos_token": true,
		"add_eos_token": false,
		"bos_token":     "<bos>",
		"eos_token":     "<end_of_turn>",
		"pad_token":     "<pad>",
		"unk_token":     "<unk>",
		"chat_template": "{{ bos_token }}{% for message in messages %}{% set role = 'model' if message['role'] == 'assistant' else message['role'] %}" +
			"<start_of_turn>{{ role }}\n{{ message['content'] | trim }}<end_of_turn>\n{% endfor %}" +
			"{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}",
	}
	tokJSON, tokCfg = filepath.Join(dir, "tokenizer.json"), filepath.Join(dir, "tokenizer_config.json")
	for _, f := range []struct {
		path string
		v    any
	}{{tokJSON, tok}, {tokCfg, cfg}} {
		data, err := json.Marshal(f.v)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return tokJSON, tokCfg
}

// screenGolden is the golden screen of TestTmux; the README shows it.
const screenGolden = "testdata/screen.txt"

// volatileRE matches the parts of a screen that change from run to run:
// speeds and memory.
var volatileRE = regexp.MustCompile(`(decode|prefill) [0-9.]+ tok/s|mem [0-9.]+ [KMG]?i?B|· [0-9.]+ tok/s`)

// normalizeScreen replaces the volatile parts of a screen by placeholders.
func normalizeScreen(s string) string {
	return volatileRE.ReplaceAllStringFunc(s, func(v string) string {
		switch {
		case strings.HasPrefix(v, "mem "):
			return "mem <N>"
		case strings.HasPrefix(v, "· "):
			return "· <N> tok/s"
		}
		return strings.Fields(v)[0] + " <N> tok/s"
	})
}

// checkScreenGolden compares a captured screen with the golden, speeds
// and memory aside, and checks that the README shows the golden. With
// -update-screen it writes both instead.
func checkScreenGolden(t *testing.T, got string) {
	t.Helper()
	readmePath := filepath.Join(moduleRoot(t), "README.md")
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	start, end, err := readmeCapture(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	if *updateScreen {
		if err := os.WriteFile(screenGolden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		updated := string(readme[:start]) + got + string(readme[end:])
		if err := os.WriteFile(readmePath, []byte(updated), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(screenGolden)
	if err != nil {
		t.Fatal(err)
	}
	if normalizeScreen(got) != normalizeScreen(string(want)) {
		t.Errorf("the screen differs from %s (speeds and memory aside); if the change is meant, run go test ./ui -run TestTmux -update-screen\n%s",
			screenGolden, lineDiff(normalizeScreen(string(want)), normalizeScreen(got)))
	}
	if shown := string(readme[start:end]); shown != string(want) {
		t.Errorf("README.md's capture is not %s; run go test ./ui -run TestTmux -update-screen\n%s", screenGolden, lineDiff(string(want), shown))
	}
}

// readmeCapture finds the README's screen capture: the body of the first
// fenced block after the "## What it looks like" heading.
func readmeCapture(readme string) (start, end int, err error) {
	h := strings.Index(readme, "## What it looks like")
	if h < 0 {
		return 0, 0, fmt.Errorf("README.md has no \"## What it looks like\" section")
	}
	open := strings.Index(readme[h:], "\n```\n")
	if open < 0 {
		return 0, 0, fmt.Errorf("README.md's \"What it looks like\" has no fenced block")
	}
	start = h + open + len("\n```\n")
	close := strings.Index(readme[start:], "```\n")
	if close < 0 {
		return 0, 0, fmt.Errorf("README.md's screen capture is not closed")
	}
	return start, start + close, nil
}

// lineDiff lists the lines that differ between want and got.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  want %q\n   got %q\n", i+1, wl, gl)
		}
	}
	return b.String()
}
