package checkpoint

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"

	"golang.org/x/sys/unix"

	"mlxchat/safefile"
	"mlxchat/tensor"
)

// MaxHeaderBytes bounds the JSON header of a safetensors file (the format's
// own readers use 100 MB).
const MaxHeaderBytes = 100 << 20

// TensorInfo describes one tensor of a safetensors file.
type TensorInfo struct {
	// Name is the tensor's key in the header.
	Name string
	// DType is the element type; Invalid when the file's dtype (RawDType) is
	// valid safetensors but not one the tensor package handles.
	DType tensor.DType
	// RawDType is the dtype string from the header ("BF16", "BOOL", ...).
	RawDType string
	// Shape is the tensor's shape.
	Shape []int
	// File is the path of the file holding the tensor.
	File string
	// Begin and End are byte offsets into the file's data section.
	Begin, End int64
}

// Bytes is the size of the tensor's data.
func (t TensorInfo) Bytes() int64 { return t.End - t.Begin }

// sizes of safetensors dtypes the tensor package does not model; they may
// appear in a checkpoint and are only rejected when read.
var otherDTypeSizes = map[string]int{
	"BOOL": 1, "I8": 1, "U16": 2, "I16": 2, "U64": 8,
	"F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1, "F4": 1, "F6_E2M3": 1, "F6_E3M2": 1,
}

// SafetensorsFile is one safetensors file mapped read-only.
type SafetensorsFile struct {
	// Path is the file's path.
	Path string
	// Metadata is the header's optional __metadata__ string map.
	Metadata map[string]string
	// Tensors lists the header entries in data order.
	Tensors []TensorInfo

	mapped []byte // the whole file, nil after Close
	data   []byte // mapped[8+headerLen:]
	size   int64
	// headerOnly is set for a file read by ReadSafetensorsHeader: it has
	// no mapping, and Data fails.
	headerOnly bool
}

// ParseSafetensorsHeader validates a safetensors header against the total
// file size and returns its entries sorted by data offset. path is only used
// in error messages. head must hold at least the first 8+headerLen bytes.
func ParseSafetensorsHeader(path string, head []byte, fileSize int64) (tensors []TensorInfo, meta map[string]string, dataStart int64, err error) {
	if fileSize < 8 || len(head) < 8 {
		return nil, nil, 0, fmt.Errorf("%s: truncated safetensors file: %d bytes, need at least 8 for the header length", path, fileSize)
	}
	n := binary.LittleEndian.Uint64(head[:8])
	if n > MaxHeaderBytes {
		return nil, nil, 0, fmt.Errorf("%s: safetensors header length %d exceeds the %d-byte limit", path, n, MaxHeaderBytes)
	}
	if int64(n) > fileSize-8 {
		return nil, nil, 0, fmt.Errorf("%s: truncated safetensors file: header length %d runs past the end of the file (%d bytes)", path, n, fileSize)
	}
	if int64(len(head)) < 8+int64(n) {
		return nil, nil, 0, fmt.Errorf("%s: truncated safetensors header: have %d of %d bytes", path, len(head)-8, n)
	}
	hdr := head[8 : 8+n]
	dataStart = 8 + int64(n)
	dataLen := fileSize - dataStart

	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(hdr))
	if err := dec.Decode(&raw); err != nil {
		return nil, nil, 0, fmt.Errorf("%s: safetensors header is not valid JSON: %v", path, err)
	}
	if raw == nil {
		return nil, nil, 0, fmt.Errorf("%s: safetensors header is not a JSON object", path)
	}
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &meta); err != nil {
				return nil, nil, 0, fmt.Errorf("%s: safetensors __metadata__ is not a string map: %v", path, err)
			}
			continue
		}
		var e struct {
			DType       *string  `json:"dtype"`
			Shape       *[]int64 `json:"shape"`
			DataOffsets *[]int64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(msg, &e); err != nil {
			return nil, nil, 0, fmt.Errorf("%s: tensor %q: bad header entry: %v", path, name, err)
		}
		if e.DType == nil || e.Shape == nil || e.DataOffsets == nil {
			return nil, nil, 0, fmt.Errorf("%s: tensor %q: header entry needs dtype, shape and data_offsets", path, name)
		}
		info := TensorInfo{Name: name, RawDType: *e.DType, File: path}
		elemSize := 0
		if d, err := tensor.ParseDType(*e.DType); err == nil {
			info.DType = d
			elemSize = d.Size()
		} else if s, ok := otherDTypeSizes[*e.DType]; ok {
			elemSize = s
		} else {
			return nil, nil, 0, fmt.Errorf("%s: tensor %q: unknown dtype %q", path, name, *e.DType)
		}
		count := int64(1)
		info.Shape = make([]int, len(*e.Shape))
		for i, d := range *e.Shape {
			if d < 0 || d > math.MaxInt32 {
				return nil, nil, 0, fmt.Errorf("%s: tensor %q: bad shape %v", path, name, *e.Shape)
			}
			info.Shape[i] = int(d)
			if d != 0 && count > math.MaxInt64/d {
				return nil, nil, 0, fmt.Errorf("%s: tensor %q: shape %v overflows", path, name, *e.Shape)
			}
			count *= d
		}
		if len(*e.DataOffsets) != 2 {
			return nil, nil, 0, fmt.Errorf("%s: tensor %q: data_offsets must have 2 entries, got %d", path, name, len(*e.DataOffsets))
		}
		info.Begin, info.End = (*e.DataOffsets)[0], (*e.DataOffsets)[1]
		if info.Begin < 0 || info.End < info.Begin {
			return nil, nil, 0, fmt.Errorf("%s: tensor %q: bad data_offsets [%d %d]", path, name, info.Begin, info.End)
		}
		if info.End > dataLen {
			return nil, nil, 0, fmt.Errorf("%s: tensor %q: data_offsets [%d %d] run past the end of the data (%d bytes; file truncated?)", path, name, info.Begin, info.End, dataLen)
		}
		if count > math.MaxInt64/int64(elemSize) || count*int64(elemSize) != info.End-info.Begin {
			return nil, nil, 0, fmt.Errorf("%s: tensor %q: %s%v needs %d bytes, data_offsets [%d %d] give %d", path, name, *e.DType, info.Shape, count*int64(elemSize), info.Begin, info.End, info.End-info.Begin)
		}
		tensors = append(tensors, info)
	}
	sort.Slice(tensors, func(i, j int) bool {
		if tensors[i].Begin != tensors[j].Begin {
			return tensors[i].Begin < tensors[j].Begin
		}
		if tensors[i].End != tensors[j].End {
			return tensors[i].End < tensors[j].End
		}
		return tensors[i].Name < tensors[j].Name // the header is a map: no order of its own
	})
	var prev *TensorInfo
	for i := range tensors {
		t := &tensors[i]
		if t.Begin == t.End {
			continue
		}
		if prev != nil && t.Begin < prev.End {
			return nil, nil, 0, fmt.Errorf("%s: tensors %q [%d %d] and %q [%d %d] overlap", path, prev.Name, prev.Begin, prev.End, t.Name, t.Begin, t.End)
		}
		prev = t
	}
	return tensors, meta, dataStart, nil
}

// openRegular opens path for reading and returns it with its size, after
// checking it is a regular file that can hold a safetensors header length.
func openRegular(path string) (*os.File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", path, safefile.Unwrap(err))
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("%s: %w", path, safefile.Unwrap(err))
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("%s: not a regular file", path)
	}
	size := st.Size()
	if size < 8 {
		f.Close()
		return nil, 0, fmt.Errorf("%s: truncated safetensors file: %d bytes, need at least 8 for the header length", path, size)
	}
	return f, size, nil
}

// OpenSafetensors maps a safetensors file read-only and validates its
// header. The mapping stays until Close.
func OpenSafetensors(path string) (*SafetensorsFile, error) {
	f, size, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > math.MaxInt {
		return nil, fmt.Errorf("%s: file too large to map (%d bytes)", path, size)
	}
	mapped, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("%s: mmap: %w", path, err)
	}
	tensors, meta, dataStart, err := ParseSafetensorsHeader(path, mapped, size)
	if err != nil {
		_ = unix.Munmap(mapped)
		return nil, err
	}
	return &SafetensorsFile{Path: path, Metadata: meta, Tensors: tensors, mapped: mapped, data: mapped[dataStart:], size: size}, nil
}

// ReadSafetensorsHeader reads and validates the header of a safetensors
// file as OpenSafetensors does (same checks, same errors) without mapping
// or reading the tensor data: the file's Tensors and Metadata are set, and
// Data fails. It is for checking a model without loading it.
func ReadSafetensorsHeader(path string) (*SafetensorsFile, error) {
	f, size, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, 8)
	if _, err := f.ReadAt(head, 0); err != nil {
		return nil, fmt.Errorf("%s: reading the header length: %w", path, err)
	}
	// The length is checked (against the limit and the file size) before
	// the header is read.
	if n := binary.LittleEndian.Uint64(head); n <= MaxHeaderBytes && int64(n) <= size-8 {
		head = append(head, make([]byte, n)...)
		if _, err := f.ReadAt(head[8:], 8); err != nil {
			return nil, fmt.Errorf("%s: reading the header: %w", path, err)
		}
	}
	tensors, meta, _, err := ParseSafetensorsHeader(path, head, size)
	if err != nil {
		return nil, err
	}
	return &SafetensorsFile{Path: path, Metadata: meta, Tensors: tensors, size: size, headerOnly: true}, nil
}

// Size is the file's size in bytes.
func (s *SafetensorsFile) Size() int64 { return s.size }

// Data returns the bytes of a tensor of this file, zero-copy.
func (s *SafetensorsFile) Data(t TensorInfo) ([]byte, error) {
	if s.headerOnly {
		return nil, fmt.Errorf("%s: only the header was read", s.Path)
	}
	if s.mapped == nil {
		return nil, fmt.Errorf("%s: file is closed", s.Path)
	}
	return s.data[t.Begin:t.End:t.End], nil
}

// Close unmaps the file. Tensors viewing it become invalid.
func (s *SafetensorsFile) Close() error {
	if s.mapped == nil {
		return nil
	}
	err := unix.Munmap(s.mapped)
	s.mapped, s.data = nil, nil
	if err != nil {
		return fmt.Errorf("%s: munmap: %w", s.Path, err)
	}
	return nil
}
