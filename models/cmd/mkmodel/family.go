package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"mlxchat/models/synth"
	"mlxchat/models/tokenizer"
	"mlxchat/tensor"
)

// familyRun is what runFamily needs from the parsed flags.
type familyRun struct {
	arch, kind, out string
	opt             synth.Options
	vocab, window   int
	set             map[string]bool // flags given on the command line
	prepare         func() error    // checks and clears the output directory
}

// runFamily writes a checkpoint of one of synth.Families: tiny (a small
// random model) or full (the layout of the family's mlx-community 4-bit
// repository).
func runFamily(r familyRun, stdout io.Writer) error {
	for _, f := range []string{"naming", "towers", "omit-shared-kv"} {
		if r.set[f] {
			return fmt.Errorf("-%s applies to -arch gemma3n only", f)
		}
	}
	var (
		d   synth.FamilyDims
		err error
	)
	stored, err := synth.StoredDType(r.arch)
	if err != nil {
		return fmt.Errorf("-arch %q: want gemma3n or one of %s", r.arch, strings.Join(synth.Families, ", "))
	}
	switch r.kind {
	case "tiny":
		if d, err = synth.TinyFamily(r.arch); err != nil {
			return err
		}
		r.opt.ExactQuant = true
		stored = tensor.BF16
		if r.opt.TokenizerJSON != "" {
			// A real tokenizer brings the family's own special ids and,
			// unless -vocab says otherwise, its vocabulary size.
			if d.IDs, err = synth.FamilyIDs(r.arch); err != nil {
				return err
			}
			if r.vocab == 0 {
				tk, err := tokenizer.Load(r.opt.TokenizerJSON, r.opt.TokenizerConfig)
				if err != nil {
					return fmt.Errorf("-tokenizer: %w", err)
				}
				d.Vocab = tk.VocabSize()
				for _, id := range append([]int{d.IDs.BOS}, d.IDs.EOS...) {
					d.Vocab = max(d.Vocab, id+1)
				}
			}
		}
		if r.vocab > 0 {
			if min := synth.MinGemmaTokenizerVocab(); r.opt.TokenizerJSON == "" && r.vocab < min {
				return fmt.Errorf("-vocab %d: the generated tokenizer needs at least %d ids; pass -tokenizer FILE for a smaller vocabulary", r.vocab, min)
			}
			d.Vocab = r.vocab
		}
		if r.window > 0 {
			if d.Window == 0 {
				return fmt.Errorf("-window: %s has no sliding-window layers", r.arch)
			}
			d.Window = r.window
		}
	case "full":
		if r.vocab > 0 || r.window > 0 {
			return fmt.Errorf("-vocab and -window apply to -kind tiny only")
		}
		if d, err = synth.FullFamily(r.arch); err != nil {
			return err
		}
	default:
		return fmt.Errorf("-kind %q: want tiny or full", r.kind)
	}
	if r.opt.ScaleDType == tensor.Invalid {
		r.opt.ScaleDType = stored
	}
	if r.opt.DenseDType == tensor.Invalid {
		r.opt.DenseDType = stored
	}
	if err := r.prepare(); err != nil {
		return err
	}
	start := time.Now()
	res, err := synth.WriteFamily(r.out, d, r.opt)
	if err != nil {
		return err
	}
	what := "tiny " + r.arch
	if r.kind == "full" {
		repo, _ := synth.FamilyRepo(r.arch)
		what = "the layout of " + repo
	}
	tokNote := "tokenizer copied from " + r.opt.TokenizerJSON
	if r.opt.TokenizerJSON == "" {
		tokNote = fmt.Sprintf("generated Gemma tokenizer of %d ids", d.Vocab)
	}
	fmt.Fprintf(stdout, "wrote %s (%s): %d tensors, %.2f GB of weights in %s (%d quantized modules), %s, in %.1fs\n",
		res.Dir, what, res.Tensors, float64(res.Bytes)/1e9, strings.Join(res.Files, ", "), len(res.Quantized), tokNote, time.Since(start).Seconds())
	return nil
}
