package enginetest

import "mlxchat/models/synth"

// WriteTinyFamily writes a tiny random checkpoint of family (a
// synth.Families model_type: gemma3_text, llama, qwen3, olmo3, cohere2)
// with the tiny tokenizer into dir: synth.TinyFamily's sizes (512 tokens,
// window 8 with every second layer global for the sliding families),
// 4-bit quantized when bits is 4 or 8, dense when 0.
func WriteTinyFamily(dir, family string, bits int, seed uint64) error {
	d, err := synth.TinyFamily(family)
	if err != nil {
		return err
	}
	return writeWithTokenizer(dir, bits, func(opt synth.Options) error {
		opt.Seed = seed
		_, err := synth.WriteFamily(dir, d, opt)
		return err
	})
}
