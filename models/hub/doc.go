// Package hub resolves a model argument to a local MLX model directory: a
// path, a Hugging Face repo id (ORG/NAME) or a short alias such as
// gemma3n-e2b-4bit. It looks in the Hugging Face hub cache
// ($HF_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub, layout
// models--ORG--NAME/snapshots/REV with refs/main) and in the XDG data dir
// (mlxchat/models/ORG/NAME), and otherwise downloads the files a model
// needs from the hub ($HF_ENDPOINT, $HF_TOKEN honoured) into the cache
// layout, so mlx-lm and huggingface_hub share them. Downloads resume,
// are verified by size and hash, report progress through a callback and
// stop when their context is cancelled.
//
// It may import the standard library and github.com/adrg/xdg.
package hub
