package checkpoint

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rawFile builds safetensors bytes from a header string and data length,
// letting tests write headers that no correct writer would produce.
func rawFile(header string, headerLen uint64, data int) []byte {
	out := make([]byte, 8, 8+len(header)+data)
	binary.LittleEndian.PutUint64(out, headerLen)
	out = append(out, header...)
	return append(out, make([]byte, data)...)
}

func okFile(header string, data int) []byte { return rawFile(header, uint64(len(header)), data) }

func TestOpenSafetensorsCorrupt(t *testing.T) {
	const good = `{"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}}`
	cases := []struct {
		name    string
		content []byte
		want    string
	}{
		{"empty", nil, "truncated safetensors file: 0 bytes"},
		{"short", []byte{1, 2, 3, 4}, "truncated safetensors file: 4 bytes"},
		{"header past end", rawFile(good, 1000, 0), "header length 1000 runs past the end of the file"},
		{"header over limit", rawFile(good, MaxHeaderBytes+1, 0), "exceeds the"},
		{"header not json", okFile(`{"a":`, 24), "header is not valid JSON"},
		{"header not object", okFile(`[1,2]`, 0), "header is not valid JSON"},
		{"header null", okFile(`null`, 0), "not a JSON object"},
		{"data truncated", okFile(good, 20), `tensor "a": data_offsets [0 24] run past the end of the data (20 bytes`},
		{"bytes disagree with shape", okFile(`{"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}}`, 24), `tensor "a": F32[2 3] needs 24 bytes, data_offsets [0 20] give 20`},
		{"bytes disagree with dtype", okFile(`{"a":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,24]}}`, 24), `BF16[2 3] needs 12 bytes`},
		{"overlap", okFile(`{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}}`, 24), `tensors "a" [0 16] and "b" [8 24] overlap`},
		{"same range", okFile(`{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"U32","shape":[4],"data_offsets":[0,16]}}`, 16), "overlap"},
		{"unknown dtype", okFile(`{"a":{"dtype":"Q4","shape":[2],"data_offsets":[0,2]}}`, 2), `tensor "a": unknown dtype "Q4"`},
		{"missing field", okFile(`{"a":{"dtype":"F32","shape":[2]}}`, 8), `needs dtype, shape and data_offsets`},
		{"bad offsets order", okFile(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}}`, 8), `bad data_offsets [8 4]`},
		{"negative offset", okFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}}`, 8), `bad data_offsets`},
		{"three offsets", okFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}}`, 8), `data_offsets must have 2 entries`},
		{"negative dim", okFile(`{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, 8), `bad shape`},
		{"huge shape", okFile(`{"a":{"dtype":"F32","shape":[2147483647,2147483647,2147483647],"data_offsets":[0,4]}}`, 8), `overflows`},
		{"string shape", okFile(`{"a":{"dtype":"F32","shape":"2","data_offsets":[0,8]}}`, 8), `bad header entry`},
		{"bad metadata", okFile(`{"__metadata__":{"x":1}}`, 0), `__metadata__ is not a string map`},
	}
	dir := t.TempDir()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, "f"+string(rune('a'+i))+".safetensors")
			if err := os.WriteFile(p, tc.content, 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := OpenSafetensors(p)
			if err == nil {
				f.Close()
				t.Fatalf("no error, want %q", tc.want)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) || !strings.HasPrefix(msg, p+": ") || strings.Contains(msg, "\n") {
				t.Fatalf("error %q: want one line starting with the path and containing %q", msg, tc.want)
			}
			if h, herr := ReadSafetensorsHeader(p); herr == nil || herr.Error() != msg {
				if h != nil {
					h.Close()
				}
				t.Fatalf("ReadSafetensorsHeader: %v\nOpenSafetensors:       %v\nwant the same error", herr, err)
			}
		})
	}
}

func TestOpenSafetensorsValid(t *testing.T) {
	// Two tensors, a zero-sized one, metadata, and an unmodelled dtype that
	// only fails when read.
	hdr := `{"__metadata__":{"format":"mlx"},"w":{"dtype":"U32","shape":[2],"data_offsets":[0,8]},` +
		`"z":{"dtype":"F32","shape":[0,4],"data_offsets":[8,8]},"m":{"dtype":"BOOL","shape":[3],"data_offsets":[8,11]}}`
	content := okFile(hdr, 11)
	binary.LittleEndian.PutUint32(content[8+len(hdr):], 7)
	binary.LittleEndian.PutUint32(content[8+len(hdr)+4:], 9)
	p := filepath.Join(t.TempDir(), "model.safetensors")
	if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := OpenSafetensors(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Metadata["format"] != "mlx" || len(f.Tensors) != 3 || f.Size() != int64(len(content)) {
		t.Fatalf("metadata %v, %d tensors, size %d", f.Metadata, len(f.Tensors), f.Size())
	}
	if f.Tensors[0].Name != "w" {
		t.Fatalf("tensors not in data order: %v", f.Tensors)
	}
	d, err := f.Data(f.Tensors[0])
	if err != nil {
		t.Fatal(err)
	}
	if binary.LittleEndian.Uint32(d) != 7 || binary.LittleEndian.Uint32(d[4:]) != 9 || cap(d) != 8 {
		t.Fatalf("data %v cap %d", d, cap(d))
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Data(f.Tensors[0]); err == nil {
		t.Fatal("Data after Close: no error")
	}
}
