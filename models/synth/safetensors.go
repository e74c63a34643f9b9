package synth

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"

	"golang.org/x/sys/unix"

	"mlxchat/tensor"
)

// FillKind says how a generated tensor's bytes are produced.
type FillKind uint8

// Fill kinds.
const (
	// FillUniform draws floats uniformly from Center-Spread..Center+Spread
	// and stores them in the tensor's float dtype.
	FillUniform FillKind = iota
	// FillBits fills every byte with random bits (packed quantized weights:
	// every code 0..2^bits-1 equally likely).
	FillBits
	// FillZero leaves the data zero and untouched (a hole in the file).
	FillZero
)

// Fill generates a tensor's data from the writer's seed and the tensor's
// name, so the same seed always gives the same bytes.
type Fill struct {
	Kind           FillKind
	Center, Spread float32
}

// TensorSpec is one tensor to write: either explicit Data or a Fill.
type TensorSpec struct {
	Name  string
	DType tensor.DType
	Shape []int
	// Data, when non-nil, is written as is and must match DType and Shape.
	Data []byte
	// Fill generates the data when Data is nil.
	Fill Fill
}

// Bytes is the size of the tensor's data.
func (s TensorSpec) Bytes() int64 {
	return int64(tensor.NumElements(s.Shape)) * int64(s.DType.Size())
}

type headerEntry struct {
	DType       string  `json:"dtype"`
	Shape       []int   `json:"shape"`
	DataOffsets []int64 `json:"data_offsets"`
}

// chunkBytes is the unit of parallel generation; each chunk has its own
// random stream so output does not depend on scheduling.
const chunkBytes = 4 << 20

// WriteSafetensors writes tensors to path in the safetensors format with the
// given __metadata__. Tensors are laid out contiguously, larger element
// sizes first, then by name (as the reference writer does, which keeps
// every tensor aligned to its element size); the header is padded with
// spaces to a multiple of 8 bytes. Generated data is produced in parallel
// straight into a writable mapping of the file.
func WriteSafetensors(path string, tensors []TensorSpec, metadata map[string]string, seed uint64) error {
	specs := append([]TensorSpec(nil), tensors...)
	seen := map[string]bool{}
	for _, s := range specs {
		if s.Name == "" || s.Name == "__metadata__" || seen[s.Name] {
			return fmt.Errorf("%s: bad or duplicate tensor name %q", path, s.Name)
		}
		seen[s.Name] = true
		if s.DType.Size() == 0 {
			return fmt.Errorf("%s: tensor %q: bad dtype %v", path, s.Name, s.DType)
		}
		if s.Data != nil && int64(len(s.Data)) != s.Bytes() {
			return fmt.Errorf("%s: tensor %q: %s%v needs %d bytes, got %d", path, s.Name, s.DType, s.Shape, s.Bytes(), len(s.Data))
		}
		if s.Data == nil && s.Fill.Kind == FillUniform && !s.DType.IsFloat() {
			return fmt.Errorf("%s: tensor %q: uniform fill needs a float dtype, got %s", path, s.Name, s.DType)
		}
	}
	sort.SliceStable(specs, func(i, j int) bool {
		if a, b := specs[i].DType.Size(), specs[j].DType.Size(); a != b {
			return a > b
		}
		return specs[i].Name < specs[j].Name
	})
	header := map[string]any{}
	if len(metadata) > 0 {
		header["__metadata__"] = metadata
	}
	offsets := make([]int64, len(specs))
	var off int64
	for i, s := range specs {
		offsets[i] = off
		header[s.Name] = headerEntry{DType: s.DType.String(), Shape: append([]int{}, s.Shape...), DataOffsets: []int64{off, off + s.Bytes()}}
		off += s.Bytes()
	}
	hdr, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("%s: encoding header: %w", path, err)
	}
	for len(hdr)%8 != 0 {
		hdr = append(hdr, ' ')
	}
	dataStart := int64(8 + len(hdr))
	total := dataStart + off
	if total > math.MaxInt {
		return fmt.Errorf("%s: %d bytes is too large", path, total)
	}

	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	defer f.Close()
	if err := f.Truncate(total); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(total), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("%s: mmap for writing: %w", path, err)
	}
	binary.LittleEndian.PutUint64(m[:8], uint64(len(hdr)))
	copy(m[8:], hdr)

	type job struct {
		spec  *TensorSpec
		dst   []byte
		chunk int
	}
	jobs := make(chan job, 64)
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				fillChunk(j.dst, j.spec, seed, j.chunk)
			}
		}()
	}
	for i := range specs {
		s := &specs[i]
		dst := m[dataStart+offsets[i] : dataStart+offsets[i]+s.Bytes()]
		if s.Data != nil {
			copy(dst, s.Data)
			continue
		}
		if s.Fill.Kind == FillZero {
			continue
		}
		// Chunks hold a whole number of elements of every dtype (<= 8 bytes).
		for c := 0; c*chunkBytes < len(dst); c++ {
			end := min((c+1)*chunkBytes, len(dst))
			jobs <- job{spec: s, dst: dst[c*chunkBytes : end], chunk: c}
		}
	}
	close(jobs)
	wg.Wait()
	if err := unix.Munmap(m); err != nil {
		return fmt.Errorf("%s: munmap: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func fillChunk(dst []byte, s *TensorSpec, seed uint64, chunk int) {
	r := rng{mix(seed, hashName(s.Name), uint64(chunk))}
	if s.Fill.Kind == FillBits {
		i := 0
		for ; i+8 <= len(dst); i += 8 {
			binary.LittleEndian.PutUint64(dst[i:], r.next())
		}
		for v := r.next(); i < len(dst); i++ {
			dst[i] = byte(v)
			v >>= 8
		}
		return
	}
	c, sp := s.Fill.Center, s.Fill.Spread
	switch s.DType {
	case tensor.F32:
		for i := 0; i+4 <= len(dst); i += 4 {
			binary.LittleEndian.PutUint32(dst[i:], math.Float32bits(c+sp*r.uniform()))
		}
	case tensor.BF16:
		for i := 0; i+2 <= len(dst); i += 2 {
			binary.LittleEndian.PutUint16(dst[i:], tensor.F32ToBF16(c+sp*r.uniform()))
		}
	case tensor.F16:
		for i := 0; i+2 <= len(dst); i += 2 {
			binary.LittleEndian.PutUint16(dst[i:], tensor.F32ToF16(c+sp*r.uniform()))
		}
	case tensor.F64:
		for i := 0; i+8 <= len(dst); i += 8 {
			binary.LittleEndian.PutUint64(dst[i:], math.Float64bits(float64(c+sp*r.uniform())))
		}
	}
}

// ShardName is the file name of shard i (0-based) of n, in the
// model-0000N-of-0000M.safetensors pattern.
func ShardName(i, n int) string {
	return fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, n)
}

// WriteWeights writes tensors into dir as model.safetensors, or, when
// shardBytes > 0 and the data exceeds it, as several shards plus
// model.safetensors.index.json. It returns the file names written.
func WriteWeights(dir string, tensors []TensorSpec, shardBytes int64, seed uint64) ([]string, error) {
	meta := map[string]string{"format": "mlx"}
	var total int64
	for _, t := range tensors {
		total += t.Bytes()
	}
	if shardBytes <= 0 || total <= shardBytes {
		name := "model.safetensors"
		if err := WriteSafetensors(filepath.Join(dir, name), tensors, meta, seed); err != nil {
			return nil, err
		}
		return []string{name}, nil
	}
	sorted := append([]TensorSpec(nil), tensors...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var shards [][]TensorSpec
	var cur []TensorSpec
	var curBytes int64
	for _, t := range sorted {
		if len(cur) > 0 && curBytes+t.Bytes() > shardBytes {
			shards = append(shards, cur)
			cur, curBytes = nil, 0
		}
		cur = append(cur, t)
		curBytes += t.Bytes()
	}
	shards = append(shards, cur)
	weightMap := map[string]string{}
	var names []string
	for i, sh := range shards {
		name := ShardName(i, len(shards))
		names = append(names, name)
		if err := WriteSafetensors(filepath.Join(dir, name), sh, meta, seed); err != nil {
			return nil, err
		}
		for _, t := range sh {
			weightMap[t.Name] = name
		}
	}
	index := map[string]any{"metadata": map[string]any{"total_size": total}, "weight_map": weightMap}
	if err := writeJSON(filepath.Join(dir, "model.safetensors.index.json"), index); err != nil {
		return nil, err
	}
	return append(names, "model.safetensors.index.json"), nil
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
