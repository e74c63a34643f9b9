package tokenizer

import "testing"

// BenchmarkEncode100k encodes the ~100k-token benchmark document
// (gendoc(280000): 280 kB of mixed prose, code, CJK, emoji and whitespace;
// 103,611 Gemma 3 / 99,597 Llama 3 / 103,528 Qwen 3 tokens) on one goroutine.
// "warm" keeps the per-word cache between runs, as repeated encodes in the
// app do; "cold" clears it before each run.
//
// Measured one after the other on this project's machine (2 x86-64 cores
// shared with other builds, load average ~6, so all figures are inflated
// alike): the references by testdata/bench_reference.mjs (node 20.20),
// this package by `go test -bench Encode100k -benchtime 10x`. Cold = first
// encode on a fresh tokenizer (Go: cache cleared), warm = best repeat.
//
//	                             gemma3          llama3          qwen3
//	                           cold   warm     cold   warm     cold   warm
//	transformers.js (JS)      1245    853     2726   1020     1387    383  ms
//	HF tokenizers 0.23 (Rust)  686    458      995    636      419    237  ms
//	this package (Go)           46     14       30     22       32     26  ms
//
// The Rust figures go through its node bindings (one sequence is encoded on
// one thread) and include building its Encoding (offsets, word ids). With
// the machine less loaded, transformers.js took ~420 / ~300 / ~360 ms warm.
func BenchmarkEncode100k(b *testing.B) {
	doc := gendoc(b, 280000, false)
	for _, model := range fixtureModels {
		tok := loadFixture(b, model)
		n := len(tok.Encode(doc, false))
		for _, mode := range []string{"warm", "cold"} {
			b.Run(model+"/"+mode, func(b *testing.B) {
				b.SetBytes(int64(len(doc)))
				for b.Loop() {
					if mode == "cold" {
						tok.model.clearCache()
					}
					tok.Encode(doc, false)
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
			})
		}
	}
}

// BenchmarkEncodeNoSpace1M encodes the 1 MB document without whitespace,
// a single pre-token for every model here: the BPE merge loop is
// O(n log n) in the word length, so this stays well under a second.
func BenchmarkEncodeNoSpace1M(b *testing.B) {
	doc := gendoc(b, 1<<20, true)
	for _, model := range fixtureModels {
		tok := loadFixture(b, model)
		b.Run(model, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				tok.Encode(doc, false)
			}
		})
	}
}

// BenchmarkLoad measures parsing tokenizer.json and building the tables.
func BenchmarkLoad(b *testing.B) {
	for _, model := range fixtureModels {
		loadFixture(b, model) // skip or fail when absent
		b.Run(model, func(b *testing.B) {
			for b.Loop() {
				if _, err := LoadDir(fixtureDir(model)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
