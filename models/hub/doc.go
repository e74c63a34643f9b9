// Package hub resolves a model argument to a local MLX model directory: a
// path, a Hugging Face repo id (ORG/NAME) or a short alias such as
// gemma3n-e2b-4bit. It looks in the Hugging Face hub cache
// ($HF_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub, layout
// models--ORG--NAME/snapshots/REV with refs/main) and in the XDG data dir
// (mlxchat/models/ORG/NAME), and otherwise downloads the files a model
// needs from the hub ($HF_ENDPOINT, $HF_TOKEN honoured) into the cache
// layout, so mlx-lm and huggingface_hub share them. Downloads resume,
// are verified by size and hash, never grow a file past the size the hub
// lists (or a cap when it lists none), check the free disk space first and
// stop on a full disk with an error that leads with "no space left on
// device", report progress through a callback and stop when their context
// is cancelled. Two downloads of one repository take turns through a lock
// file in the cache (.locks/models--ORG--NAME/), the second reusing what
// the first fetched.
//
// With Options.CheckConfig set, a download fetches config.json first and
// stops there, with an *UnsupportedError, when the check refuses it (a
// model_type this build does not run), so no weights are downloaded for a
// model that cannot load. Short names exist only for families that load.
//
// A cached snapshot counts as complete only when it holds every file the
// repository lists: Download records that list in a manifest
// (models--ORG--NAME/.mlxchat/COMMIT.json); a snapshot another tool made
// is checked structurally (config.json, tokenizer.json, every shard of the
// index or of a numbered series, no link to a missing blob) and, once,
// against the hub's listing when the hub is reachable. Missing files are
// fetched again.
//
// List and Remove show and delete the models of both caches (for mlxchat
// list and rm); Remove deletes only model folders of those caches.
//
// It may import the standard library, github.com/adrg/xdg and safefile.
package hub
