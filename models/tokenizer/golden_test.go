package tokenizer

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode"
)

type goldenDoc struct {
	Bytes      int     `json:"bytes"`
	TextSHA256 string  `json:"text_sha256"`
	NIDs       int     `json:"n_ids"`
	IDsSHA256  string  `json:"ids_sha256"`
	Head       []int32 `json:"head"`
	Tail       []int32 `json:"tail"`
}

type goldenFile struct {
	Package string `json:"package"`
	Cases   map[string]struct {
		IDs     []int32 `json:"ids"`
		Decoded string  `json:"decoded"`
	} `json:"cases"`
	AddSpecial struct {
		Text string  `json:"text"`
		IDs  []int32 `json:"ids"`
	} `json:"add_special"`
	Docs   map[string]goldenDoc `json:"docs"`
	Pretok [][2]json.RawMessage `json:"pretok"`
}

func readGolden(t *testing.T, name string) *goldenFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "golden_"+name+".json"))
	if err != nil {
		t.Fatalf("reading golden: %v", err)
	}
	var g goldenFile
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatalf("parsing golden_%s.json: %v", name, err)
	}
	return &g
}

func readCorpus(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "corpus", name+".txt"))
	if err != nil {
		t.Fatalf("reading corpus: %v", err)
	}
	return string(data)
}

// firstDiff describes where two id lists first differ.
func firstDiff(got, want []int32) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			lo := max(0, i-3)
			return "first difference at " + itoa(i) + ": got " + fmtIDs(got[lo:min(len(got), i+4)]) +
				" want " + fmtIDs(want[lo:min(len(want), i+4)])
		}
	}
	return "lengths differ: got " + itoa(len(got)) + " want " + itoa(len(want))
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func fmtIDs(ids []int32) string { b, _ := json.Marshal(ids); return string(b) }

// TestGoldenCorpus encodes and decodes every corpus file and compares with
// the JavaScript reference.
func TestGoldenCorpus(t *testing.T) {
	for _, model := range fixtureModels {
		t.Run(model, func(t *testing.T) {
			tok := loadFixture(t, model)
			g := readGolden(t, model)
			names := make([]string, 0, len(g.Cases))
			for n := range g.Cases {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, name := range names {
				want := g.Cases[name]
				t.Run(name, func(t *testing.T) {
					text := readCorpus(t, name)
					got := tok.Encode(text, false)
					if !slices.Equal(got, want.IDs) {
						t.Errorf("Encode: %s", firstDiff(got, want.IDs))
					}
					if dec := tok.Decode(want.IDs); dec != want.Decoded {
						t.Errorf("Decode = %q, want %q", dec, want.Decoded)
					}
				})
			}
			got := tok.Encode(g.AddSpecial.Text, true)
			if !slices.Equal(got, g.AddSpecial.IDs) {
				t.Errorf("Encode(%q, addSpecial) = %v, want %v", g.AddSpecial.Text, got, g.AddSpecial.IDs)
			}
		})
	}
}

// docFragments mirrors doc_fragments.json.
type docFragments struct {
	Fragments  []string `json:"fragments"`
	Separators []string `json:"separators"`
}

// gendoc is the Go twin of gendoc in make_golden.mjs: fragments drawn with
// xorshift32 until the document reaches targetBytes.
func gendoc(t testing.TB, targetBytes int, noSpace bool) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "doc_fragments.json"))
	if err != nil {
		t.Fatalf("reading doc fragments: %v", err)
	}
	var f docFragments
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("parsing doc_fragments.json: %v", err)
	}
	x := uint32(2463534242)
	frags := f.Fragments
	if noSpace {
		x = 88675123
		frags = slices.DeleteFunc(slices.Clone(frags), func(s string) bool { return strings.IndexFunc(s, unicode.IsSpace) >= 0 })
	}
	next := func() uint32 {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		return x
	}
	var b strings.Builder
	for b.Len() < targetBytes {
		b.WriteString(frags[next()%uint32(len(frags))])
		if !noSpace {
			b.WriteString(f.Separators[next()%uint32(len(f.Separators))])
		}
	}
	return b.String()
}

func idsSHA256(ids []int32) string {
	buf := make([]byte, 4*len(ids))
	for i, v := range ids {
		binary.LittleEndian.PutUint32(buf[4*i:], uint32(v))
	}
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:])
}

// TestGoldenDocuments encodes the two generated 1 MB documents (one with
// whitespace, one without any, which for these tokenizers is a single
// pre-token of a million bytes) and compares count, hash, head and tail.
func TestGoldenDocuments(t *testing.T) {
	if testing.Short() {
		t.Skip("1 MB documents skipped in -short mode")
	}
	texts := map[string]string{"doc1m": gendoc(t, 1<<20, false), "nospace1m": gendoc(t, 1<<20, true)}
	for _, model := range fixtureModels {
		t.Run(model, func(t *testing.T) {
			tok := loadFixture(t, model)
			g := readGolden(t, model)
			for name, want := range g.Docs {
				text := texts[name]
				sum := sha256.Sum256([]byte(text))
				if len(text) != want.Bytes || hex.EncodeToString(sum[:]) != want.TextSHA256 {
					t.Fatalf("%s: generated document differs from the one make_golden.mjs encoded (%d bytes)", name, len(text))
				}
				got := tok.Encode(text, false)
				if len(got) != want.NIDs || idsSHA256(got) != want.IDsSHA256 {
					head := got[:min(len(got), len(want.Head))]
					t.Errorf("%s: %d ids (want %d), hash mismatch; head: %s", name, len(got), want.NIDs, firstDiff(head, want.Head))
					if len(got) >= len(want.Tail) {
						if tail := got[len(got)-len(want.Tail):]; !slices.Equal(tail, want.Tail) {
							t.Errorf("%s tail: %s", name, firstDiff(tail, want.Tail))
						}
					}
				}
			}
		})
	}
}
