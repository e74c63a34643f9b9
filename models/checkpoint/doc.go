// Package checkpoint opens an MLX model directory: config.json (with the
// quantization block and its per-module overrides), the safetensors weights
// (model.safetensors, or shards listed in model.safetensors.index.json)
// mapped read-only into memory, generation_config.json, and the paths of the
// tokenizer files.
//
// Tensors returned by a Checkpoint are zero-copy views of the mapped files:
// they stay valid until Close. A Checkpoint is safe for concurrent reads;
// Close must not race with them.
//
// OpenHeaders opens the same directory with the same checks and errors but
// reads only the safetensors headers (ReadSafetensorsHeader: no mapping,
// no tensor data read): its tensors have a dtype and a shape and no data,
// and Floats gives zeros, so that an architecture can be built from it to
// check a model without loading it (models.Check).
//
// Config's bounded accessors (Size, IntIn, IntsIn, FloatIn and their ...Or
// forms, with the sane ranges of SizeRange) and Checkpoint's CheckDim and
// CheckCount are what every architecture's config parser uses, so that a
// size from config.json is checked against sane bounds and against the
// tensors before anything is allocated from it.
//
// Every problem with the input (missing or truncated files, a bad header,
// offsets past the end, overlapping tensors, dtype or shape disagreements,
// unsupported quantization) is returned as a one-line error that names the
// file and the problem; nothing here panics on bad input.
//
// It may import only the standard library, golang.org/x/sys/unix, tensor
// and safefile.
package checkpoint
