// make_golden_lib.mjs holds the document generator shared by
// make_golden.mjs and bench_reference.mjs.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const enc = new TextEncoder();
// gendoc builds the deterministic test documents; golden_test.go has the
// same generator in Go (xorshift32 over doc_fragments.json).
const frag = JSON.parse(readFileSync(join(here, "doc_fragments.json"), "utf8"));
export function gendoc(targetBytes, noSpace) {
  let x = noSpace ? 88675123 : 2463534242;
  const next = () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
  const frags = noSpace ? frag.fragments.filter((f) => !/\s/u.test(f)) : frag.fragments;
  const parts = [];
  let bytes = 0;
  while (bytes < targetBytes) {
    const f = frags[next() % frags.length];
    parts.push(f);
    bytes += enc.encode(f).length;
    if (!noSpace) {
      const s = frag.separators[next() % frag.separators.length];
      parts.push(s);
      bytes += enc.encode(s).length;
    }
  }
  return parts.join("");
}

