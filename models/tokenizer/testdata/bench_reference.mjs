// bench_reference.mjs times the two reference implementations on the
// ~100k-token benchmark document of BenchmarkEncode100k (gendoc(280000)):
// the transformers.js port (@lenml/tokenizers) and Hugging Face tokenizers
// (Rust, through its node bindings; one sequence encodes on one thread).
// "cold" is the first encode on a freshly loaded tokenizer, "warm" the best
// of 5 repeats. Usage, after scripts/fetch-tokenizers.sh --with-hf:
//   node models/tokenizer/testdata/bench_reference.mjs
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gendoc } from "./make_golden_lib.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const pkgs = join(here, "..", "..", "..", "testdata", "tokenizers");
const { TokenizerLoader } = await import(join(pkgs, "tokenizers", "package", "dist", "main.mjs"));
const hf = (await import(join(pkgs, "hf", "node_modules", "tokenizers", "index.js"))).default;
const doc = gendoc(280000, false);

async function time(fn) {
  const t0 = performance.now();
  const n = await fn();
  return [performance.now() - t0, n];
}
for (const name of ["gemma3", "llama3", "qwen3"]) {
  const dir = join(pkgs, name, "package", "models");
  const js = TokenizerLoader.fromPreTrained({
    tokenizerJSON: JSON.parse(readFileSync(join(dir, "tokenizer.json"), "utf8")),
    tokenizerConfig: JSON.parse(readFileSync(join(dir, "tokenizer_config.json"), "utf8")),
  });
  const rust = hf.Tokenizer.fromFile(join(dir, "tokenizer.json"));
  const jsRun = () => js.encode(doc, { add_special_tokens: false }).length;
  const rustRun = async () => (await rust.encode(doc, null, { addSpecialTokens: false })).getIds().length;
  for (const [label, run] of [["js", jsRun], ["rust", rustRun]]) {
    const [cold, n] = await time(run);
    let warm = Infinity;
    for (let i = 0; i < 5; i++) warm = Math.min(warm, (await time(run))[0]);
    console.log(`${name} ${label}: ${n} tokens, cold ${cold.toFixed(0)} ms, warm ${warm.toFixed(0)} ms`);
  }
}
