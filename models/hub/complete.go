package hub

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"mlxchat/safefile"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
)

// A snapshot in the Hugging Face cache can be incomplete in ways that the
// cache layout does not show: another tool fetched only some files, a file
// was deleted, a blob went missing under its link. Locate therefore checks
// a cached snapshot against the repository's file list, which Download
// records in a manifest (models--ORG--NAME/.mlxchat/COMMIT.json; the hub
// tools ignore other entries of a repository folder). A snapshot without a
// manifest (made by another tool) gets a structural check here, and Resolve
// checks it once against the hub's listing when it can reach the hub.

// manifestFile is a snapshot's recorded file list.
type manifestFile struct {
	Name string `json:"name"`
	Size int64  `json:"size"` // -1 when the hub did not say
}

type manifest struct {
	Repo   string         `json:"repo"`
	Commit string         `json:"commit"`
	Files  []manifestFile `json:"files"`
}

func manifestPath(repoDir, commit string) string {
	return filepath.Join(repoDir, ".mlxchat", commit+".json")
}

func readManifest(repoDir, commit string) (*manifest, error) {
	b, err := os.ReadFile(manifestPath(repoDir, commit))
	if err != nil {
		return nil, err
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %v", manifestPath(repoDir, commit), err)
	}
	if m.Commit != commit {
		return nil, fmt.Errorf("%s: manifest is for commit %q", manifestPath(repoDir, commit), m.Commit)
	}
	return &m, nil
}

// writeManifest records the files of a complete snapshot, atomically.
func writeManifest(repoDir string, m manifest) error {
	sort.Slice(m.Files, func(i, j int) bool { return m.Files[i].Name < m.Files[j].Name })
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return err
	}
	p := manifestPath(repoDir, m.Commit)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return wrapWrite("creating", filepath.Dir(p), err)
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		os.Remove(tmp)
		return wrapWrite("writing", tmp, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	return nil
}

// missingFiles returns the files of want that dir lacks (a link whose blob
// is gone counts as missing) or holds at another size than listed.
func missingFiles(dir string, want []manifestFile) []string {
	var out []string
	for _, f := range want {
		st, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f.Name)))
		switch {
		case err != nil || !st.Mode().IsRegular():
			out = append(out, f.Name)
		case f.Size >= 0 && st.Size() != f.Size:
			out = append(out, fmt.Sprintf("%s (%d of %d bytes)", f.Name, st.Size(), f.Size))
		}
	}
	return out
}

// checkSnapshot reports whether a cached snapshot is complete: against its
// manifest when Download wrote one (verified), else structurally
// (checkModelDir, and tokenizer.json present; not verified).
func checkSnapshot(repoDir, commit string) (verified bool, err error) {
	dir := filepath.Join(repoDir, "snapshots", commit)
	m, merr := readManifest(repoDir, commit)
	if merr == nil {
		if miss := missingFiles(dir, m.Files); len(miss) > 0 {
			return false, fmt.Errorf("snapshot %s is incomplete: missing %s", dir, joinShort(miss))
		}
		return true, checkModelDir(dir)
	}
	if !errors.Is(merr, fs.ErrNotExist) {
		return false, merr
	}
	if err := checkModelDir(dir); err != nil {
		return false, err
	}
	if !isFile(filepath.Join(dir, "tokenizer.json")) {
		return false, fmt.Errorf("snapshot %s is incomplete: missing tokenizer.json", dir)
	}
	return false, nil
}

// joinShort lists names, at most five of them.
func joinShort(names []string) string {
	if len(names) <= 5 {
		return fmt.Sprint(names)
	}
	return fmt.Sprintf("%v and %d more", names[:5], len(names)-5)
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// checkModelDir reports whether dir holds config.json and complete
// weights: model.safetensors, or an index whose shards all exist, or
// numbered shards (NAME-00001-of-00003.safetensors) with none missing.
// Links are followed, so a link to a missing blob counts as missing.
func checkModelDir(dir string) error {
	for _, name := range []string{"config.json", "model.safetensors", "model.safetensors.index.json"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err == nil && !st.Mode().IsRegular() {
			return fmt.Errorf("model directory %s: %s is %s, expected a regular file", dir, name, safefile.Kind(st.Mode()))
		}
	}
	if !isFile(filepath.Join(dir, "config.json")) {
		return fmt.Errorf("model directory %s: no config.json", dir)
	}
	if isFile(filepath.Join(dir, "model.safetensors")) {
		return nil
	}
	index := filepath.Join(dir, "model.safetensors.index.json")
	if _, err := os.Lstat(index); err == nil {
		shards, err := indexShards(index)
		if err != nil {
			return fmt.Errorf("model directory %s: %w", dir, err)
		}
		for _, s := range shards {
			if !isFile(filepath.Join(dir, s)) {
				return fmt.Errorf("model directory %s: shard %s listed in model.safetensors.index.json is missing", dir, s)
			}
		}
		return nil
	}
	all, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	var names, present []string
	for _, p := range all {
		names = append(names, filepath.Base(p))
		if isFile(p) {
			present = append(present, filepath.Base(p))
		}
	}
	if len(present) == 0 {
		return fmt.Errorf("model directory %s: no safetensors weights", dir)
	}
	if miss := missingShards(names, present); len(miss) > 0 {
		return fmt.Errorf("model directory %s: missing shard %s", dir, joinShort(miss))
	}
	return nil
}

var shardRe = regexp.MustCompile(`^(.*)-(\d+)-of-(\d+)\.safetensors$`)

// missingShards returns the numbered shards (NAME-0000i-of-0000n) of the
// series that names (the *.safetensors entries of a directory) begin
// which are not among present (those that are readable files).
func missingShards(names, present []string) []string {
	have := map[string]bool{}
	for _, n := range present {
		have[n] = true
	}
	var miss []string
	seen := map[string]bool{}
	for _, n := range names {
		m := shardRe.FindStringSubmatch(n)
		if m == nil {
			continue
		}
		total, err := strconv.Atoi(m[3])
		if err != nil || total > 100000 || seen[m[1]+"/"+m[3]] {
			continue
		}
		seen[m[1]+"/"+m[3]] = true
		width := len(m[2])
		for i := 1; i <= total; i++ {
			name := fmt.Sprintf("%s-%0*d-of-%s.safetensors", m[1], width, i, m[3])
			if !have[name] {
				miss = append(miss, name)
			}
		}
	}
	sort.Strings(miss)
	return miss
}

// indexShards lists the shard files named by a model.safetensors.index.json
// (read with safefile.Read: a file that turned into a pipe or a device
// after checkModelDir looked is an error, not a hang).
func indexShards(path string) ([]string, error) {
	b, err := safefile.Read(path, maxListingBytes)
	if err != nil {
		return nil, err
	}
	return parseIndex(filepath.Base(path), b)
}

// parseIndex reads the shard files of a model.safetensors.index.json's
// bytes (name names it in errors): each a plain file name of the model
// directory, sorted, without repeats.
func parseIndex(name string, b []byte) ([]string, error) {
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	seen := map[string]bool{}
	var out []string
	for _, f := range idx.WeightMap {
		if f == "" || filepath.Base(f) != f || f == "." || f == ".." {
			return nil, fmt.Errorf("%s: weight_map names %q, not a file of the model directory", name, f)
		}
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: weight_map is empty", name)
	}
	sort.Strings(out)
	return out, nil
}
