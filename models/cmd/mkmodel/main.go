package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"mlxchat/models/synth"
	"mlxchat/tensor"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "mkmodel:", err)
		os.Exit(1)
	}
}

func parseFloatDType(flagName, s string) (tensor.DType, error) {
	switch strings.ToLower(s) {
	case "":
		return tensor.Invalid, nil // the writer's default
	case "bf16":
		return tensor.BF16, nil
	case "f16":
		return tensor.F16, nil
	case "f32":
		return tensor.F32, nil
	}
	return tensor.Invalid, fmt.Errorf("-%s %q: want bf16, f16 or f32", flagName, s)
}

// prepareOut refuses to write over a model in out unless force is set, and
// with force drops the weights of an earlier model so a single file and
// shards of different runs never mix.
func prepareOut(out string, force bool) error {
	if _, err := os.Stat(filepath.Join(out, "config.json")); err == nil && !force {
		return fmt.Errorf("%s already holds a model (config.json); pass -force to overwrite", out)
	}
	if !force {
		return nil
	}
	old, _ := filepath.Glob(filepath.Join(out, "model*.safetensors"))
	old = append(old, filepath.Join(out, "model.safetensors.index.json"), filepath.Join(out, "generation_config.json"))
	for _, p := range old {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("-force: %w", err)
		}
	}
	return nil
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("mkmodel", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	arch := fs.String("arch", "gemma3n", "model_type to write: gemma3n or "+strings.Join(synth.Families, ", "))
	kind := fs.String("kind", "tiny", "tiny (a small random model) or full (the layout of the family's mlx-community 4-bit repo; e2b is gemma3n's full)")
	out := fs.String("out", "", "output model directory (required)")
	bits := fs.Int("bits", 4, "quantization bits: 4 or 8, 0 for a dense model")
	group := fs.Int("group", 64, "quantization group size: 32, 64 or 128")
	seed := fs.Uint64("seed", 1, "random seed; the same seed gives the same bytes")
	naming := fs.String("naming", "mlx-vlm", "tensor names: mlx-vlm (language_model.model.*) or mlx-lm (model.language_model.*)")
	towers := fs.Bool("towers", true, "e2b: include the vision and audio towers (mlx-vlm naming only)")
	omitKV := fs.Bool("omit-shared-kv", false, "leave out the unused k/v projections of KV-shared layers")
	shardMB := fs.Int64("shard-mb", 0, "split weights into shards of at most this many MiB (0: one file)")
	scaleDT := fs.String("scale-dtype", "", "dtype of quantization scales and biases: bf16, f16 or f32 (default bf16; -kind full: what the repo stores)")
	denseDT := fs.String("dense-dtype", "", "dtype of unquantized tensors: bf16, f16 or f32 (default bf16; -kind full: what the repo stores)")
	tok := fs.String("tokenizer", "", "tokenizer.json to copy into the model directory (default: a generated Gemma tokenizer of the model's vocab size, with tokenizer_config.json and the Gemma chat template)")
	tokCfg := fs.String("tokenizer-config", "", "tokenizer_config.json to copy into the model directory")
	vocab := fs.Int("vocab", 0, "tiny: override vocab_size (e.g. 262400 to use a real Gemma tokenizer)")
	window := fs.Int("window", 0, "tiny: override sliding_window")
	force := fs.Bool("force", false, "overwrite a directory that already holds a config.json")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fmt.Fprintln(stdout, "usage: mkmodel [-arch MODEL_TYPE] -kind tiny|full -out DIR [flags]")
			fs.PrintDefaults()
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *out == "" {
		return fmt.Errorf("-out DIR is required")
	}
	opt := synth.Options{Bits: *bits, GroupSize: *group, Seed: *seed, OmitSharedKV: *omitKV,
		ShardBytes: *shardMB << 20, TokenizerJSON: *tok, TokenizerConfig: *tokCfg, GenerateTokenizer: *tok == ""}
	if *tok == "" && *tokCfg != "" {
		return fmt.Errorf("-tokenizer-config needs -tokenizer (the generated tokenizer brings its own tokenizer_config.json)")
	}
	var err error
	if opt.ScaleDType, err = parseFloatDType("scale-dtype", *scaleDT); err != nil {
		return err
	}
	if opt.DenseDType, err = parseFloatDType("dense-dtype", *denseDT); err != nil {
		return err
	}
	if *arch != "gemma3n" {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		return runFamily(familyRun{arch: *arch, kind: *kind, out: *out, opt: opt, vocab: *vocab, window: *window, set: set,
			prepare: func() error { return prepareOut(*out, *force) }}, stdout)
	}
	switch *naming {
	case "mlx-vlm":
		opt.Naming = synth.NamingMLXVLM
	case "mlx-lm":
		opt.Naming = synth.NamingMLXLM
	default:
		return fmt.Errorf("-naming %q: want mlx-vlm or mlx-lm", *naming)
	}
	var dims synth.Gemma3nDims
	switch *kind {
	case "tiny":
		dims = synth.TinyGemma3n()
		opt.ExactQuant = true
		if *vocab > 0 {
			if min := synth.MinGemmaTokenizerVocab(); *tok == "" && *vocab < min {
				return fmt.Errorf("-vocab %d: the generated tokenizer needs at least %d ids; pass -tokenizer FILE for a smaller vocabulary", *vocab, min)
			}
			dims.Vocab = *vocab
			dims.VocabPerLayer = min(dims.VocabPerLayer, *vocab)
		}
		if *window > 0 {
			dims.SlidingWindow = *window
		}
	case "full", "e2b":
		dims = synth.E2BGemma3n()
		opt.Towers = *towers && opt.Naming == synth.NamingMLXVLM
		if *vocab > 0 || *window > 0 {
			return fmt.Errorf("-vocab and -window apply to -kind tiny only")
		}
	default:
		return fmt.Errorf("-kind %q: want tiny or full (e2b)", *kind)
	}
	if err := prepareOut(*out, *force); err != nil {
		return err
	}
	start := time.Now()
	res, err := synth.WriteGemma3n(*out, dims, opt)
	if err != nil {
		return err
	}
	tokNote := "tokenizer copied from " + *tok
	if *tok == "" {
		tokNote = fmt.Sprintf("generated Gemma tokenizer of %d ids", dims.Vocab)
	}
	fmt.Fprintf(stdout, "wrote %s: %d tensors, %.2f GB of weights in %s (%d quantized modules), %s, in %.1fs\n",
		res.Dir, res.Tensors, float64(res.Bytes)/1e9, strings.Join(res.Files, ", "), len(res.Quantized), tokNote, time.Since(start).Seconds())
	return nil
}
