package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"mlxchat/safefile"
	"mlxchat/tensor"
)

// File names inside an MLX model directory.
const (
	ConfigFile           = "config.json"
	GenerationConfigFile = "generation_config.json"
	WeightsFile          = "model.safetensors"
	WeightsIndexFile     = "model.safetensors.index.json"
	TokenizerFile        = "tokenizer.json"
	TokenizerConfigFile  = "tokenizer_config.json"
	ChatTemplateFile     = "chat_template.jinja"
)

// GenerationConfig holds generation_config.json.
type GenerationConfig struct {
	// Config is the whole file, for settings not modelled here.
	*Config
	// EOSTokenIDs are the ids that end generation (eos_token_id, one integer
	// or a list); nil when absent.
	EOSTokenIDs []int
}

// Checkpoint is an opened MLX model directory.
type Checkpoint struct {
	// Dir is the model directory.
	Dir string
	// Config is config.json.
	Config *Config
	// Quant is the quantization block of config.json; nil when the model is
	// not quantized.
	Quant *Quantization
	// Generation is generation_config.json; nil when the file is absent.
	Generation *GenerationConfig
	// TokenizerPath is the path of tokenizer.json; "" when absent.
	TokenizerPath string
	// TokenizerConfigPath is the path of tokenizer_config.json; "" when absent.
	TokenizerConfigPath string
	// TokenizerConfig is tokenizer_config.json decoded; nil when absent.
	TokenizerConfig *Config
	// ChatTemplatePath is the path of chat_template.jinja; "" when absent.
	ChatTemplatePath string

	files   []*SafetensorsFile
	mappers []tensor.WeightMapper // told before the files are unmapped
	tensors map[string]tensorRef
	names   []string
	total   int64
	closed  bool
	// headersOnly is set by OpenHeaders: the weight files' headers were
	// read, their data neither mapped nor read.
	headersOnly bool
}

type tensorRef struct {
	file *SafetensorsFile
	info TensorInfo
}

// Open reads the configuration files of dir and maps its safetensors
// weights: model.safetensors, or the shards named by
// model.safetensors.index.json, or failing both every *.safetensors file of
// the directory. Nothing is copied; Close unmaps.
func Open(dir string) (*Checkpoint, error) {
	return open(dir, OpenSafetensors)
}

// OpenHeaders is Open without the weights' data: it reads the same
// configuration files and every safetensors header, with the same checks
// and errors, but maps and reads none of the tensor data (see
// ReadSafetensorsHeader). Its tensors have their dtype and shape and no
// Data; Floats gives zeros. An architecture built from it has been
// checked as a load checks it, and must not run: models.Check builds one
// and closes it.
func OpenHeaders(dir string) (*Checkpoint, error) {
	c, err := open(dir, ReadSafetensorsHeader)
	if err != nil {
		return nil, err
	}
	c.headersOnly = true
	return c, nil
}

// HeadersOnly reports whether the checkpoint was opened by OpenHeaders.
func (c *Checkpoint) HeadersOnly() bool { return c.headersOnly }

// open is Open with openFile opening each weight file.
func open(dir string, openFile func(path string) (*SafetensorsFile, error)) (*Checkpoint, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("model directory %s: %w", dir, safefile.Unwrap(err))
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("model directory %s: not a directory", dir)
	}
	c := &Checkpoint{Dir: dir, tensors: map[string]tensorRef{}}
	if c.Config, err = LoadConfig(filepath.Join(dir, ConfigFile)); err != nil {
		return nil, err
	}
	if c.Quant, err = ParseQuantization(c.Config); err != nil {
		return nil, err
	}
	if err := c.loadSideFiles(); err != nil {
		return nil, err
	}
	if err := c.openWeights(openFile); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return false, fmt.Errorf("%s: %w", path, safefile.Unwrap(err))
}

func (c *Checkpoint) loadSideFiles() error {
	gp := filepath.Join(c.Dir, GenerationConfigFile)
	if ok, err := exists(gp); err != nil {
		return err
	} else if ok {
		g, err := LoadConfig(gp)
		if err != nil {
			return err
		}
		eos, err := g.EOSTokenIDs("eos_token_id")
		if err != nil {
			return err
		}
		c.Generation = &GenerationConfig{Config: g, EOSTokenIDs: eos}
	}
	for _, side := range []struct {
		name string
		dst  *string
	}{{TokenizerFile, &c.TokenizerPath}, {TokenizerConfigFile, &c.TokenizerConfigPath}, {ChatTemplateFile, &c.ChatTemplatePath}} {
		p := filepath.Join(c.Dir, side.name)
		ok, err := exists(p)
		if err != nil {
			return err
		}
		if ok {
			*side.dst = p
		}
	}
	if c.TokenizerConfigPath != "" {
		tc, err := LoadConfig(c.TokenizerConfigPath)
		if err != nil {
			return err
		}
		c.TokenizerConfig = tc
	}
	return nil
}

// openWeights opens the weight files with openFile and indexes their
// tensors, checking them against model.safetensors.index.json.
func (c *Checkpoint) openWeights(openFile func(path string) (*SafetensorsFile, error)) error {
	single := filepath.Join(c.Dir, WeightsFile)
	index := filepath.Join(c.Dir, WeightsIndexFile)
	hasSingle, err := exists(single)
	if err != nil {
		return err
	}
	hasIndex, err := exists(index)
	if err != nil {
		return err
	}
	var want map[string]string // tensor name -> file, from the index
	var paths []string
	switch {
	case hasIndex:
		idx, err := LoadConfig(index)
		if err != nil {
			return err
		}
		wm, err := idx.Sub("weight_map")
		if err != nil {
			return err
		}
		want = map[string]string{}
		seen := map[string]bool{}
		for _, name := range wm.Keys() {
			file, ok := wm.Raw[name].(string)
			if !ok || file == "" || strings.ContainsAny(file, `/\`) || file == "." || file == ".." {
				return fmt.Errorf("%s: weight_map[%q]: want a file name in the model directory, got %s", index, name, describeJSON(wm.Raw[name]))
			}
			want[name] = file
			if !seen[file] {
				seen[file] = true
				paths = append(paths, filepath.Join(c.Dir, file))
			}
		}
		if len(paths) == 0 {
			return fmt.Errorf("%s: weight_map is empty", index)
		}
	case hasSingle:
		paths = []string{single}
	default:
		paths, err = filepath.Glob(filepath.Join(c.Dir, "*.safetensors"))
		if err != nil {
			return fmt.Errorf("model directory %s: %w", c.Dir, err)
		}
		if len(paths) == 0 {
			return fmt.Errorf("model directory %s: no %s, %s or *.safetensors file", c.Dir, WeightsFile, WeightsIndexFile)
		}
	}
	sort.Strings(paths)
	for _, p := range paths {
		f, err := openFile(p)
		if err != nil {
			if hasIndex && errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%s: shard %s listed in %s is missing", p, filepath.Base(p), WeightsIndexFile)
			}
			return err
		}
		c.files = append(c.files, f)
		for _, t := range f.Tensors {
			if prev, dup := c.tensors[t.Name]; dup {
				return fmt.Errorf("%s: tensor %q is also in %s", p, t.Name, prev.file.Path)
			}
			c.tensors[t.Name] = tensorRef{file: f, info: t}
			c.total += t.Bytes()
		}
	}
	for name, file := range want {
		ref, ok := c.tensors[name]
		if !ok {
			return fmt.Errorf("%s: tensor %q listed in %s is missing", filepath.Join(c.Dir, file), name, WeightsIndexFile)
		}
		if filepath.Base(ref.file.Path) != file {
			return fmt.Errorf("%s: tensor %q is in %s, not in %s", index, name, filepath.Base(ref.file.Path), file)
		}
	}
	c.names = slices.Sorted(maps.Keys(c.tensors))
	return nil
}

// MapWeights offers every weight file's mapping to m (a backend that reads
// weights in place) and makes Close call m.UnmapWeights for each file
// before unmapping it. On error the files mapped so far are unmapped from m
// again.
func (c *Checkpoint) MapWeights(m tensor.WeightMapper) error {
	if c.headersOnly {
		return fmt.Errorf("model directory %s: only the weights' headers were read, there is nothing to map", c.Dir)
	}
	for i, f := range c.files {
		if f.mapped == nil {
			return fmt.Errorf("%s: file is closed", f.Path)
		}
		if err := m.MapWeights(f.mapped); err != nil {
			for _, g := range c.files[:i] {
				_ = m.UnmapWeights(g.mapped)
			}
			return fmt.Errorf("%s: %w", f.Path, err)
		}
	}
	c.mappers = append(c.mappers, m)
	return nil
}

// Close unmaps every weight file, after telling the backends given to
// MapWeights to let go of them. Tensors obtained from the checkpoint must
// not be used afterwards.
func (c *Checkpoint) Close() error {
	var first error
	for _, m := range c.mappers {
		for _, f := range c.files {
			if f.mapped == nil {
				continue
			}
			if err := m.UnmapWeights(f.mapped); err != nil && first == nil {
				first = fmt.Errorf("%s: %w", f.Path, err)
			}
		}
	}
	c.mappers = nil
	for _, f := range c.files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	c.closed = true
	return first
}

// Names returns every tensor name, sorted.
func (c *Checkpoint) Names() []string { return append([]string(nil), c.names...) }

// Has reports whether a tensor exists.
func (c *Checkpoint) Has(name string) bool {
	_, ok := c.tensors[name]
	return ok
}

// Info returns a tensor's header entry without touching its data.
func (c *Checkpoint) Info(name string) (TensorInfo, bool) {
	r, ok := c.tensors[name]
	return r.info, ok
}

// Files returns the paths of the mapped safetensors files.
func (c *Checkpoint) Files() []string {
	out := make([]string, len(c.files))
	for i, f := range c.files {
		out[i] = f.Path
	}
	return out
}

// TotalBytes is the size of all tensor data in the checkpoint.
func (c *Checkpoint) TotalBytes() int64 { return c.total }

// HasPrefix returns the first of the candidates that begins at least one
// tensor name, e.g. to tell mlx-vlm naming ("language_model.model.") from
// mlx-lm/transformers naming ("model.language_model."); ok is false when
// none does.
func (c *Checkpoint) HasPrefix(candidates ...string) (prefix string, ok bool) {
	for _, p := range candidates {
		i := sort.SearchStrings(c.names, p)
		if i < len(c.names) && strings.HasPrefix(c.names[i], p) {
			return p, true
		}
	}
	return "", false
}

// Tensor returns a zero-copy view of a tensor's bytes. It fails when the
// tensor is missing, has a dtype the tensor package does not handle, or the
// checkpoint is closed. Opened by OpenHeaders, the tensor has its dtype
// and shape and no Data.
func (c *Checkpoint) Tensor(name string) (*tensor.Tensor, error) {
	if c.closed {
		return nil, fmt.Errorf("model directory %s: checkpoint is closed", c.Dir)
	}
	r, ok := c.tensors[name]
	if !ok {
		return nil, fmt.Errorf("model directory %s: tensor %q not found", c.Dir, name)
	}
	if r.info.DType == tensor.Invalid {
		return nil, fmt.Errorf("%s: tensor %q: dtype %s not supported", r.file.Path, name, r.info.RawDType)
	}
	if c.headersOnly {
		return &tensor.Tensor{DType: r.info.DType, Shape: append([]int(nil), r.info.Shape...)}, nil
	}
	data, err := r.file.Data(r.info)
	if err != nil {
		return nil, err
	}
	t, err := tensor.FromBytes(r.info.DType, r.info.Shape, data)
	if err != nil {
		return nil, fmt.Errorf("%s: tensor %q: %w", r.file.Path, name, err)
	}
	return t, nil
}

// TensorShape returns a tensor after checking its shape against what the
// caller expects; a negative entry matches any size.
func (c *Checkpoint) TensorShape(name string, shape ...int) (*tensor.Tensor, error) {
	t, err := c.Tensor(name)
	if err != nil {
		return nil, err
	}
	if !shapeMatches(t.Shape, shape) {
		return nil, fmt.Errorf("%s: tensor %q has shape %v, want %v", c.tensors[name].file.Path, name, t.Shape, shape)
	}
	return t, nil
}

// FloatTensor is TensorShape that also requires a floating-point dtype (F32,
// F16 or BF16), as norms and other dense parameters must have.
func (c *Checkpoint) FloatTensor(name string, shape ...int) (*tensor.Tensor, error) {
	t, err := c.TensorShape(name, shape...)
	if err != nil {
		return nil, err
	}
	if t.DType != tensor.F32 && t.DType != tensor.F16 && t.DType != tensor.BF16 {
		return nil, fmt.Errorf("%s: tensor %q has dtype %s, want F32, F16 or BF16", c.tensors[name].file.Path, name, t.DType)
	}
	return t, nil
}

// Floats returns the values of the float tensor name (checked as
// FloatTensor checks it) as a new []float32, for small parameters a model
// keeps a host copy of. Opened by OpenHeaders, which reads no data, the
// checkpoint gives zeros after the same checks.
func (c *Checkpoint) Floats(name string, shape ...int) ([]float32, error) {
	t, err := c.FloatTensor(name, shape...)
	if err != nil {
		return nil, err
	}
	if c.headersOnly {
		return make([]float32, t.Len()), nil
	}
	vals, err := t.ToF32()
	if err != nil {
		return nil, fmt.Errorf("%s: tensor %q: %w", c.tensors[name].file.Path, name, err)
	}
	return vals, nil
}

func shapeMatches(got, want []int) bool {
	if len(got) != len(want) {
		return false
	}
	for i, w := range want {
		if w >= 0 && got[i] != w {
			return false
		}
	}
	return true
}

// Matrix returns the weight of the linear or embedding module at prefix
// (tensors `<prefix>.weight`, and for a quantized module `<prefix>.scales`
// and `<prefix>.biases`), dense or affine-quantized, zero-copy and
// validated. The module is quantized when config.json's quantization block
// names it with parameters, dense when it names it false, and otherwise
// quantized exactly when `<prefix>.scales` exists (MLX's own rule).
func (c *Checkpoint) Matrix(prefix string) (*tensor.Matrix, error) {
	return c.matrix(prefix, 0, 0)
}

// matrix is Matrix; with out > 0 it first checks the weight tensor's own
// shape against an out x in matrix (packed, when quantized), so a wrong
// weight is named as such rather than blamed on its scales.
func (c *Checkpoint) matrix(prefix string, out, in int) (*tensor.Matrix, error) {
	wname := prefix + ".weight"
	wref, ok := c.tensors[wname]
	if !ok {
		return nil, fmt.Errorf("model directory %s: tensor %q not found", c.Dir, wname)
	}
	file := wref.file.Path
	hasScales := c.Has(prefix + ".scales")
	params, quantized, explicit := c.Quant.For(prefix)
	if !explicit {
		quantized = hasScales
	}
	if quantized && !hasScales {
		return nil, fmt.Errorf("%s: %s: missing %s.scales for a module %s marks quantized", file, prefix, prefix, c.Config.Path)
	}
	w, err := c.Tensor(wname)
	if err != nil {
		return nil, err
	}
	if len(w.Shape) != 2 {
		return nil, fmt.Errorf("%s: tensor %q has shape %v, want a 2-D matrix", file, wname, w.Shape)
	}
	if !quantized {
		if w.DType == tensor.U32 && c.Quant != nil && !hasScales {
			return nil, fmt.Errorf("%s: %s: tensor %q holds packed codes but %s.scales is missing", file, prefix, wname, prefix)
		}
		if hasScales {
			return nil, fmt.Errorf("%s: %s: module has .scales but %s marks it not quantized", file, prefix, c.Config.Path)
		}
		if out > 0 && (w.Shape[0] != out || w.Shape[1] != in) {
			return nil, fmt.Errorf("%s: tensor %q has shape %v, want [%d %d]", file, wname, w.Shape, out, in)
		}
		m := &tensor.Matrix{Out: w.Shape[0], In: w.Shape[1], W: w}
		if err := m.Validate(prefix); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		return m, nil
	}
	if c.Quant == nil {
		return nil, fmt.Errorf("%s: %s has .scales but %s has no quantization block", file, prefix, c.Config.Path)
	}
	if w.DType != tensor.U32 {
		return nil, fmt.Errorf("%s: tensor %q has dtype %s, want U32 packed %d-bit weights", file, wname, w.DType, params.Bits)
	}
	if per := 32 / params.Bits; out > 0 && (w.Shape[0] != out || in%per != 0 || w.Shape[1] != in/per) {
		return nil, fmt.Errorf("%s: tensor %q has shape %v, want [%d %d] (a %dx%d matrix packed %d %d-bit codes per U32)",
			file, wname, w.Shape, out, in/per, out, in, per, params.Bits)
	}
	scales, err := c.Tensor(prefix + ".scales")
	if err != nil {
		return nil, err
	}
	biases, err := c.Tensor(prefix + ".biases")
	if err != nil {
		return nil, err
	}
	m := &tensor.Matrix{
		Out: w.Shape[0], In: w.Shape[1] * 32 / params.Bits,
		W: w, Scales: scales, Biases: biases,
		Bits: params.Bits, GroupSize: params.GroupSize,
	}
	if err := m.Validate(prefix); err != nil {
		return nil, fmt.Errorf("%s: %w (bits %d, group_size %d)", file, err, params.Bits, params.GroupSize)
	}
	return m, nil
}

// MatrixShape is Matrix that also checks the logical size (out rows by in
// columns, before packing) against what the caller expects.
func (c *Checkpoint) MatrixShape(prefix string, out, in int) (*tensor.Matrix, error) {
	if out <= 0 || in <= 0 {
		return nil, fmt.Errorf("model directory %s: %s: want a matrix size, got %dx%d", c.Dir, prefix, out, in)
	}
	m, err := c.matrix(prefix, out, in)
	if err != nil {
		return nil, err
	}
	if m.Out != out || m.In != in {
		return nil, fmt.Errorf("%s: %s is a %dx%d matrix, want %dx%d", c.tensors[prefix+".weight"].file.Path, prefix, m.Out, m.In, out, in)
	}
	return m, nil
}

// StopTokenIDs returns the ids that end generation: generation_config.json's
// eos_token_id when present, else config.json's (top level, then
// text_config).
func (c *Checkpoint) StopTokenIDs() ([]int, error) {
	if c.Generation != nil && len(c.Generation.EOSTokenIDs) > 0 {
		return c.Generation.EOSTokenIDs, nil
	}
	if ids, err := c.Config.EOSTokenIDs("eos_token_id"); err != nil || len(ids) > 0 {
		return ids, err
	}
	return c.Config.Text().EOSTokenIDs("eos_token_id")
}

// CheckDim checks a size read from config.json (value at key of cfg)
// against axis of tensor name, so a config.json that disagrees with its
// weights fails in one line naming both before anything is sized from the
// key, e.g. "m/config.json: text_config.vocab_size = 4000, but
// embed_tokens.weight in m/model.safetensors has 512 rows". Axis 0 of a
// quantized matrix is its logical row count; other axes of packed weights
// are not logical sizes.
func (c *Checkpoint) CheckDim(cfg *Config, key string, value int, name string, axis int) error {
	r, ok := c.tensors[name]
	if !ok {
		return fmt.Errorf("model directory %s: tensor %q not found", c.Dir, name)
	}
	if axis < 0 || axis >= len(r.info.Shape) {
		return fmt.Errorf("%s: tensor %q has shape %v, no axis %d", r.file.Path, name, r.info.Shape, axis)
	}
	if got := r.info.Shape[axis]; got != value {
		what := fmt.Sprintf("has %d rows", got)
		if axis > 0 {
			what = fmt.Sprintf("has size %d on axis %d (shape %v)", got, axis, r.info.Shape)
		}
		return fmt.Errorf("%s: %s = %d, but %s in %s %s", cfg.Path, cfg.full(key), value, name, r.file.Path, what)
	}
	return nil
}

// CountIndexed returns how many consecutive indices 0, 1, 2, ... begin
// tensor names under prefix (prefix+"0.", prefix+"1.", ...), e.g. the
// decoder layers under "model.layers.".
func (c *Checkpoint) CountIndexed(prefix string) int {
	seen := map[int]bool{}
	i := sort.SearchStrings(c.names, prefix)
	for ; i < len(c.names) && strings.HasPrefix(c.names[i], prefix); i++ {
		rest := c.names[i][len(prefix):]
		dot := strings.IndexByte(rest, '.')
		if dot <= 0 {
			continue
		}
		if n, err := strconv.Atoi(rest[:dot]); err == nil && n >= 0 && strconv.Itoa(n) == rest[:dot] {
			seen[n] = true
		}
	}
	n := 0
	for seen[n] {
		n++
	}
	return n
}

// CheckCount checks a count read from config.json (value at key of cfg,
// e.g. num_hidden_layers) against the indexed tensors under prefix (see
// CountIndexed), e.g. "m/config.json: num_hidden_layers = 1000, but the
// weights hold 10 (model.layers.0 to model.layers.9)".
func (c *Checkpoint) CheckCount(cfg *Config, key string, value int, prefix string) error {
	n := c.CountIndexed(prefix)
	if n == value {
		return nil
	}
	held := "none"
	if n > 0 {
		held = fmt.Sprintf("%d (%s0 to %s%d)", n, prefix, prefix, n-1)
	}
	return fmt.Errorf("%s: %s = %d, but the weights hold %s", cfg.Path, cfg.full(key), value, held)
}
