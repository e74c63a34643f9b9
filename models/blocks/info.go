package blocks

import "mlxchat/kvcache"

// Info describes a loaded model for the engine and the UI.
type Info struct {
	// ModelType is config.json's model_type ("gemma3n", "gemma3n_text").
	ModelType string
	// VocabSize is the number of logits per token.
	VocabSize int
	// HiddenSize is the width of the residual stream.
	HiddenSize int
	// NumLayers is the number of decoder layers.
	NumLayers int
	// ContextLength is max_position_embeddings (0 when unknown).
	ContextLength int
	// SlidingWindow is the window of the sliding-attention layers (0: none).
	SlidingWindow int
	// StopIDs end generation (generation_config.json's eos_token_id, else
	// config.json's).
	StopIDs []int32
	// BOSID is the beginning-of-sequence id, -1 when unknown.
	BOSID int32
	// Quantization describes the weights, e.g. "4-bit affine, group 64" or
	// "dense BF16".
	Quantization string
	// Layers is the cache layout NewCache uses, one entry per layer.
	Layers []kvcache.LayerSpec
	// Notes are load-time remarks worth showing a user, e.g. a config
	// setting the model deliberately does not follow.
	Notes []string
}
