package engine

import (
	"math/rand"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// wordCount is a stand-in token count: one token per space-separated
// word, and one per 3 bytes of a word longer than 6.
func wordCount(s string) int {
	n := 0
	for _, w := range strings.Fields(s) {
		n += 1 + len(w)/7
	}
	return n
}

func TestSplitDocument(t *testing.T) {
	para := strings.Repeat("word ", 20) + "end.\n\n"
	for _, tc := range []struct {
		name   string
		doc    string
		budget int
		// wantStarts are the byte offsets where pieces must start (nil:
		// only the generic checks).
		wantStarts []int
	}{
		{"paragraphs pack", para + para + para + para, 45, []int{0, 2 * len(para)}},
		{"heading starts a piece when half full", para + "# Title\nshort text.\n\n" + "more words.\n", 44, []int{0, len(para)}},
		{"heading joins a piece under half full", "few words.\n\n# Title\n" + para, 44, []int{0}},
		{"long paragraph cut at sentences", strings.Repeat("one two three four five. ", 40), 30, nil},
		{"one long line cut at words", strings.Repeat("alpha ", 200), 17, nil},
		{"no spaces cut at characters", strings.Repeat("ü", 3000), 20, nil},
		{"crlf and blank lines", "a b c\r\n\r\nd e f\r\n\r\n\r\ng h i", 4, []int{0, 9, 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := splitDocument(tc.doc, tc.budget, wordCount)
			at := 0
			for i, r := range got {
				if r.Start != at || r.End <= r.Start {
					t.Fatalf("piece %d %+v: want it to start at %d and be non-empty (pieces %v)", i, r, at, got)
				}
				if n := wordCount(tc.doc[r.Start:r.End]); n > tc.budget {
					t.Fatalf("piece %d %+v has %d tokens, budget %d", i, r, n, tc.budget)
				}
				if !utf8.ValidString(tc.doc[r.Start:r.End]) {
					t.Fatalf("piece %d cuts a character", i)
				}
				at = r.End
			}
			if at != len(tc.doc) {
				t.Fatalf("pieces end at %d of %d", at, len(tc.doc))
			}
			if tc.wantStarts != nil {
				var starts []int
				for _, r := range got {
					starts = append(starts, r.Start)
				}
				if !slices.Equal(starts, tc.wantStarts) {
					t.Fatalf("pieces start at %v, want %v", starts, tc.wantStarts)
				}
			}
		})
	}
}

// TestLiveAfter checks the predicted live set against a brute-force
// simulation of chunked prefill with trimming of the oldest unfixed keys.
func TestLiveAfter(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for iter := 0; iter < 500; iter++ {
		n := 1 + rng.Intn(200)
		maxKV := 0
		if rng.Intn(5) > 0 {
			maxKV = 8 + rng.Intn(80)
		}
		sink := rng.Intn(5)
		var fixed []Span
		if sink > 0 {
			fixed = append(fixed, Span{0, sink})
		}
		for p, k := sink+rng.Intn(20), rng.Intn(3); k > 0 && maxKV > 0; k-- {
			l := 1 + rng.Intn(6)
			if sink+l+overlapLen(Span{0, 1 << 30}, fixed)-sink > maxKV/2 {
				break
			}
			fixed = append(fixed, Span{p, p + l})
			p += l + rng.Intn(30)
		}
		fixed = mergeSpans(fixed)
		isFixed := func(p int) bool { return overlapLen(Span{p, p + 1}, fixed) == 1 }
		// Brute force: chunks of up to MaxKV minus the fixed positions.
		var live []int
		chunk := n
		if maxKV > 0 {
			chunk = max(1, maxKV-overlapLen(Span{0, 1 << 30}, fixed))
		}
		for pos := 0; pos < n; pos += chunk {
			c := min(chunk, n-pos)
			if maxKV > 0 && len(live)+c > maxKV {
				d := len(live) + c - maxKV
				var kept []int
				for _, p := range live {
					if d > 0 && !isFixed(p) {
						d--
						continue
					}
					kept = append(kept, p)
				}
				live = kept
			}
			for p := pos; p < pos+c; p++ {
				live = append(live, p)
			}
		}
		var want []Span
		for _, p := range live {
			want = mergeSpans(append(want, Span{p, p + 1}))
		}
		if got := liveAfter(n, maxKV, fixed); !slices.Equal(got, want) {
			t.Fatalf("n %d max-kv %d fixed %v: liveAfter %v, simulation %v", n, maxKV, fixed, got, want)
		}
	}
}

// TestOffsets: every position's byte offset matches decoding the ids
// before it, across block cuts, for the real tiny tokenizer.
func TestOffsets(t *testing.T) {
	e, _ := newTiny(t, Settings{})
	dec := e.w.tok.(Decoder).Decode
	text := strings.Repeat("Grüße, the cat — 日本語 is on the mat.\n", 20)
	ids, _ := e.w.tok.Encode(text)
	o := newOffsets(10, ids, dec)
	if o.text != dec(ids) {
		t.Fatal("block decodings do not concatenate to the decoding")
	}
	if len(o.start) < 3 {
		t.Fatalf("only %d blocks for %d ids", len(o.start)-1, len(ids))
	}
	for i := 0; i <= len(ids); i++ {
		want := len(dec(ids[:i]))
		if got := o.byteAt(10 + i); got != want && !strings.ContainsRune(dec(ids[:i]), utf8.RuneError) {
			t.Fatalf("byteAt(%d) = %d, want %d", 10+i, got, want)
		}
	}
	for q := 0; q < len(o.text); q += 7 {
		p := o.tokenAt(q)
		if o.byteAt(p) > q || (p+1 < 10+len(ids) && o.byteAt(p+1) <= q && o.byteAt(p+1) > o.byteAt(p)) {
			t.Fatalf("tokenAt(%d) = %d, whose bytes start at %d (next %d)", q, p, o.byteAt(p), o.byteAt(p+1))
		}
	}
}
