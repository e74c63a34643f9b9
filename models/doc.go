// Package models holds model architectures and everything needed to load
// them: checkpoint loading, tokenizers, chat templates and model name
// resolution, in sub-packages.
//
// Packages under models may import kvcache and tensor; never engine or ui.
package models
