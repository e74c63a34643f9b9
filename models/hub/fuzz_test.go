package hub

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseListing feeds arbitrary bytes to the parsers of the hub's
// answers, the revision and the tree listings. They come from the network
// and must never panic; an error is one line naming the URL; a revision
// has a commit id; a size is known (>= 0) or -1; and a file the download
// would fetch (WantFile) is a plain file name, so no listing can make it
// write outside the model's snapshot. Seeds: testdata/fuzz/FuzzParseListing.
func FuzzParseListing(f *testing.F) {
	f.Add([]byte(`{"sha":"0123456789abcdef0123456789abcdef01234567","siblings":[{"rfilename":"config.json","size":12},{"rfilename":"model.safetensors","lfs":{"size":99}}]}`))
	f.Add([]byte(`[{"type":"file","path":"../config.json","size":1},{"type":"directory","path":"x"}]`))
	const u = "https://hub.example/api/models/org/name/revision/main"
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(files []remoteFile, err error) {
			t.Helper()
			if err != nil {
				if msg := err.Error(); !strings.HasPrefix(msg, u+": ") || strings.Contains(msg, "\n") {
					t.Fatalf("error is not one line naming the URL: %q", msg)
				}
				return
			}
			for _, f := range files {
				if f.size < -1 {
					t.Fatalf("%q has size %d", f.name, f.size)
				}
				// linkSnapshot writes snapshots/COMMIT/NAME: a name the
				// download takes must land right in that folder.
				const snap = "/cache/models--org--name/snapshots/c"
				if dst := filepath.Join(snap, filepath.FromSlash(f.name)); WantFile(f.name) && (filepath.Dir(dst) != snap || dst == snap) {
					t.Fatalf("WantFile takes %q, which lands at %s, not in the snapshot", f.name, dst)
				}
			}
		}
		commit, files, err := parseRevision(u, bytes.NewReader(data))
		if err == nil && !commitRe.MatchString(commit) {
			t.Fatalf("commit %q", commit)
		}
		check(files, err)
		check(parseTree(u, bytes.NewReader(data)))
	})
}

// FuzzParseIndex feeds arbitrary bytes to the parser of a model's
// model.safetensors.index.json (a file of the model repository). It must
// never panic; an error is one line naming the file; every shard it
// returns is a plain file name of the model directory, once, in order.
// Seeds: testdata/fuzz/FuzzParseIndex.
func FuzzParseIndex(f *testing.F) {
	f.Add([]byte(`{"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors","c":"model-00001-of-00002.safetensors"}}`))
	f.Add([]byte(`{"weight_map":{"a":"../../etc/passwd"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		shards, err := parseIndex("model.safetensors.index.json", data)
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, "model.safetensors.index.json: ") || strings.Contains(msg, "\n") {
				t.Fatalf("error is not one line naming the file: %q", msg)
			}
			return
		}
		for i, s := range shards {
			if s == "" || s == "." || s == ".." || s != filepath.Base(s) {
				t.Fatalf("shard %q is not a plain file name", s)
			}
			if i > 0 && shards[i-1] >= s {
				t.Fatalf("shards %q are not sorted without repeats", shards)
			}
		}
	})
}
