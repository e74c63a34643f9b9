// make_unicode_ref.mjs writes Hugging Face tokenizers' own classification of
// every Unicode code point, as seen by the parts of its pipeline that ask for
// a Unicode property, for the Go tests of models/tokenizer (unicode_test.go):
//
//   - the Oniguruma regex engine behind Split / ByteLevel regexes: \p{..} for
//     every general category, \s, \d and \w;
//   - Rust's char::is_numeric (Digits pre-tokenizer) and char::is_whitespace
//     (WhitespaceSplit pre-tokenizer, Strip normalizer);
//   - the regex crate's \w (single_word added tokens);
//   - the Lowercase normalizer (Rust's char::to_lowercase), as a full map;
//   - the NFC/NFD/NFKC/NFKD normalizers, as per-block hashes of probe outputs
//     (single code points, recomposition of the decomposition, canonical
//     reordering and blocked composition next to combining marks).
//
// It also writes the ids HF encodes a few strings with Unicode 15.1 / 16.0
// characters to, with the Gemma 3, Llama 3 and Qwen 3 tokenizers.
//
// The reference is HF tokenizers itself: the Rust library through its
// official node bindings (npm "tokenizers"), installed by
//   scripts/fetch-tokenizers.sh --with-hf
// Usage (from the repository root):
//   node models/tokenizer/testdata/make_unicode_ref.mjs models/tokenizer/testdata
// Writes unicode_ref.json and unicode_encode_ref.json into the given folder.
// make_unicode_ref.py does the same through the Python bindings; the two
// outputs are meant to be identical (diff them to compare builds).
import { readFileSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..", "..");
const pkgs = join(root, "testdata", "tokenizers");
const hfDir = join(pkgs, "hf", "node_modules", "tokenizers");
const hf = (await import(join(hfDir, "index.js"))).default;
const hfVersion = JSON.parse(readFileSync(join(hfDir, "package.json"), "utf8")).version;

const outDir = process.argv[2];
if (!outDir) {
  console.error("usage: node make_unicode_ref.mjs OUTDIR");
  process.exit(2);
}
console.log(`tokenizers ${hfVersion} (node bindings)`);

const MAX = 0x110000;
const CHUNK = 1 << 16;
const isSurrogate = (c) => c >= 0xd800 && c <= 0xdfff;
// allCodePoints lists [lo, hi) without surrogates.
function codePoints(lo, hi) {
  const out = [];
  for (let c = lo; c < hi; c++) if (!isSurrogate(c)) out.push(c);
  return out;
}
const str = (cps) => String.fromCodePoint(...cps);

// ranges turns a sorted code point list into "lo-hi" hex ranges.
function ranges(cps) {
  const out = [];
  for (let i = 0; i < cps.length; ) {
    let j = i;
    // Surrogates are never probed: a range may run across them.
    while (j + 1 < cps.length && (cps[j + 1] === cps[j] + 1 || (cps[j] === 0xd7ff && cps[j + 1] === 0xe000))) j++;
    out.push(cps[i] === cps[j] ? cps[i].toString(16) : `${cps[i].toString(16)}-${cps[j].toString(16)}`);
    i = j + 1;
  }
  return out.join(" ");
}

function tokenizerJSON(fields) {
  return JSON.stringify({
    version: "1.0", truncation: null, padding: null, added_tokens: [], normalizer: null,
    pre_tokenizer: null, post_processor: null, decoder: null,
    model: { type: "WordLevel", vocab: { "[UNK]": 0, x: 1 }, unk_token: "[UNK]" },
    ...fields,
  });
}

// removedBy returns the code points that a pre-tokenizer drops when it
// splits with behaviour "removed" (what is not covered by any piece).
// Pre-tokenizer offsets are in code points.
function removedBy(pre) {
  const hit = [];
  for (let lo = 0; lo < MAX; lo += CHUNK) {
    const cps = codePoints(lo, lo + CHUNK);
    const covered = new Uint8Array(cps.length);
    for (const [, [a, b]] of pre.preTokenizeString(str(cps))) covered.fill(1, a, b);
    cps.forEach((c, i) => { if (!covered[i]) hit.push(c); });
  }
  return hit;
}

function onigClass(pattern) {
  const t = hf.Tokenizer.fromString(tokenizerJSON({
    pre_tokenizer: { type: "Split", pattern: { Regex: pattern }, behavior: "Removed", invert: false },
  }));
  return removedBy(t.getPreTokenizer());
}

// isNumeric: the Digits pre-tokenizer (char::is_numeric) isolates each
// numeric code point. Each probed code point is put between two "a"s.
function rustNumeric() {
  const pre = hf.digitsPreTokenizer(true);
  const hit = [];
  for (let lo = 0; lo < MAX; lo += CHUNK) {
    const cps = codePoints(lo, lo + CHUNK);
    const s = "a" + cps.map((c) => String.fromCodePoint(c) + "a").join("");
    for (const [piece, [a, b]] of pre.preTokenizeString(s)) {
      if (b - a === 1 && piece !== "a") hit.push(cps[(a - 1) / 2]);
    }
  }
  return hit.sort((x, y) => x - y);
}

// regexWord: a single_word added token "x" matches only where the next
// character is not the regex crate's \w.
async function regexWord() {
  const t = hf.Tokenizer.fromString(tokenizerJSON({
    added_tokens: [{ id: 1, content: "x", single_word: true, lstrip: false, rstrip: false, normalized: false, special: false }],
  }));
  const hit = [];
  for (let lo = 0; lo < MAX; lo += CHUNK) {
    const cps = codePoints(lo, lo + CHUNK);
    const s = cps.map((c) => "x" + String.fromCodePoint(c) + " ").join("");
    const e = await t.encode(s, null, { addSpecialTokens: false });
    const matched = new Uint8Array(cps.length);
    const ids = e.getIds(), offs = e.getOffsets();
    ids.forEach((id, k) => {
      if (id === 1 && offs[k][0] % 3 === 0) matched[offs[k][0] / 3] = 1;
    });
    cps.forEach((c, i) => { if (!matched[i]) hit.push(c); });
  }
  return hit;
}

// mapEach normalizes every code point (except the separator U+000A) on its
// own, wrapped as pre + c + post, and returns the outputs.
function mapEach(n, lo, hi, pre = "", post = "") {
  const cps = codePoints(lo, hi).filter((c) => c !== 0x0a);
  const parts = n.normalizeString(cps.map((c) => pre + String.fromCodePoint(c) + post).join("\n")).split("\n");
  if (parts.length !== cps.length) throw new Error(`normalizer output for ${lo.toString(16)} has ${parts.length} parts, want ${cps.length}`);
  return [cps, parts];
}

const BLOCK = 4096;
// blockHashes hashes, per block of 4096 code points, the probe outputs joined
// by "\n" (UTF-8), keeping 16 hex digits of the SHA-256.
function blockHashes(probe) {
  const out = [];
  for (let lo = 0; lo < MAX; lo += BLOCK) {
    const parts = probe(lo, lo + BLOCK);
    out.push(parts.length === 0 ? "-" : createHash("sha256").update(parts.join("\n"), "utf8").digest("hex").slice(0, 16));
  }
  return out.join(" ");
}

const t0 = Date.now();
const lap = (what) => console.log(`${what}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);

const classes = {};
const categories = ["L", "Lu", "Ll", "Lt", "Lm", "Lo", "M", "Mn", "Mc", "Me", "N", "Nd", "Nl", "No",
  "P", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "S", "Sm", "Sc", "Sk", "So",
  "Z", "Zs", "Zl", "Zp", "C", "Cc", "Cf", "Co", "Cn"];
for (const gc of categories) classes[`onig \\p{${gc}}`] = ranges(onigClass(`\\p{${gc}}`));
for (const esc of ["s", "d", "w"]) classes[`onig \\${esc}`] = ranges(onigClass(`\\${esc}`));
lap("regex classes");
classes["rust is_numeric"] = ranges(rustNumeric());
classes["rust is_whitespace"] = ranges(removedBy(hf.whitespaceSplitPreTokenizer()));
classes["regex \\w"] = ranges(await regexWord());
lap("rust classes");

const lower = [];
for (let lo = 0; lo < MAX; lo += CHUNK) {
  const [cps, parts] = mapEach(hf.lowercase(), lo, lo + CHUNK);
  cps.forEach((c, i) => {
    if (parts[i] !== String.fromCodePoint(c)) lower.push(c.toString(16) + ":" + [...parts[i]].map((x) => x.codePointAt(0).toString(16)).join(","));
  });
}
lap("lowercase");

const forms = { NFC: hf.nfcNormalizer(), NFD: hf.nfdNormalizer(), NFKC: hf.nfkcNormalizer(), NFKD: hf.nfkdNormalizer() };
const norm = {};
for (const [name, n] of Object.entries(forms)) norm[name] = blockHashes((lo, hi) => mapEach(n, lo, hi)[1]);
// Recomposition of each code point's own decomposition (composition exclusions).
norm["NFC(NFD)"] = blockHashes((lo, hi) => forms.NFC.normalizeString(mapEach(forms.NFD, lo, hi)[1].join("\n")).split("\n"));
norm["NFKC(NFKD)"] = blockHashes((lo, hi) => forms.NFKC.normalizeString(mapEach(forms.NFKD, lo, hi)[1].join("\n")).split("\n"));
// Canonical ordering against U+0334 (ccc 1) after and U+0301 (ccc 230) before.
norm["NFD(c+U+0334)"] = blockHashes((lo, hi) => mapEach(forms.NFD, lo, hi, "", "\u0334")[1]);
norm["NFD(U+0301+c)"] = blockHashes((lo, hi) => mapEach(forms.NFD, lo, hi, "\u0301", "")[1]);
// Composition with a preceding starter, and blocking of a following U+0301.
norm["NFC(a+c+U+0301)"] = blockHashes((lo, hi) => mapEach(forms.NFC, lo, hi, "a", "\u0301")[1]);
lap("normalizers");

const ref = {
  about: "HF tokenizers' own classification of every code point 0..10FFFF except surrogates; made by make_unicode_ref.mjs / make_unicode_ref.py, do not edit",
  tokenizers: hfVersion,
  classes,
  lowercase: lower.join(" "),
  normalizer_block: BLOCK,
  normalizers: norm,
};
writeFileSync(join(outDir, "unicode_ref.json"), JSON.stringify(ref, null, 1) + "\n");

// Encode examples: the two, and more with Unicode 15.1 / 16.0 letters,
// digits, marks and symbols.
const texts = [
  " \u{10D40}", // space, GARAY DIGIT ZERO (16.0)
  "\u{2EBF0}'s", // CJK Extension I (15.1)
  "Garay \u{10D50}\u{10D70}\u{10D51}\u{10D71} \u{10D40}\u{10D41}\u{10D42}\u{10D43}!",
  "CJK I: \u{2EBF0}\u{2EBF1}\u{2EE5D} and 中文.",
  "Todhri \u{105C0}\u{105C9}\u{105D2}\u0307 Tulu-Tigalari \u{11380}\u{113B8}\u{113C2}",
  "Sunuwar \u{11BC0}\u{11BC1} digits \u{11BF0}\u{11BF1}\u{11BF2}\u{11BF3}12345",
  "Kirat Rai \u{16D43}\u{16D63}\u{16D70}\u{16D71}\u{16D72}\u{16D73} Gurung Khema \u{16100}\u{1611E}\u{16130}",
  "Outlined \u{1CCF0}\u{1CCF1}\u{1CCF2}\u{1CCF3} Myanmar \u{116D0}\u{116D1}\u{116D2} legacy \u{1CC00}\u{1CC01}",
  "Latin \uA7CB\uA7CC\uA7CD \uA7DA\uA7DB\uA7DC Cyrillic \u1C89\u1C8A IDC \u2FFC\u2FFD\u31EF",
  "Egyptian \u{13460}\u{13461} Ol Onal \u{1E5D0}\u{1E5F0}\u{1E5F1} \u{10D40}'ll \u{2EBF0}\u{2EBF0}\u{2EBF0}\u{2EBF0}'S",
];
const encodeRef = { about: "HF tokenizers encode ids (no special tokens); made by make_unicode_ref.mjs / make_unicode_ref.py", tokenizers: hfVersion, tokenizers_under: "testdata/tokenizers/NAME/package/models/tokenizer.json", cases: {} };
for (const name of ["gemma3", "llama3", "qwen3"]) {
  const tok = hf.Tokenizer.fromFile(join(pkgs, name, "package", "models", "tokenizer.json"));
  const cases = [];
  for (const text of texts) cases.push({ text, ids: (await tok.encode(text, null, { addSpecialTokens: false })).getIds() });
  encodeRef.cases[name] = cases;
}
writeFileSync(join(outDir, "unicode_encode_ref.json"), JSON.stringify(encodeRef, null, 1) + "\n");
lap("encode examples");
