#!/usr/bin/env python3
"""make_unicode_ref.py: Hugging Face tokenizers' own classification of every
Unicode code point, through its Python bindings (the `tokenizers` package).

It writes the same two files as make_unicode_ref.mjs (which uses HF's node
bindings and made the committed copies), in the same format, so that running
both and diffing the outputs shows whether the two builds of HF agree:

  unicode_ref.json         regex classes (Oniguruma \\p{..}, \\s, \\d, \\w), Rust's
                           is_numeric / is_whitespace, the regex crate's \\w,
                           the Lowercase map and per-block hashes of the
                           NFC/NFD/NFKC/NFKD probes;
  unicode_encode_ref.json  encode ids of strings with Unicode 15.1 / 16.0
                           characters for the gemma3, llama3 and qwen3
                           tokenizer.json files under testdata/tokenizers/.

Usage, from the repository root (scripts/fetch-tokenizers.sh fetches the
tokenizer files):
  python3 models/tokenizer/testdata/make_unicode_ref.py OUTDIR
  python3 models/tokenizer/testdata/make_unicode_ref.py --self-test
See make_unicode_ref.mjs for what each probe does and why.
"""
import hashlib
import json
import os
import sys
import time

MAX = 0x110000
CHUNK = 1 << 16
BLOCK = 4096
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")


def code_points(lo, hi):
    return [c for c in range(lo, min(hi, MAX)) if not 0xD800 <= c <= 0xDFFF]


def ranges(cps):
    out = []
    i = 0
    while i < len(cps):
        j = i
        while j + 1 < len(cps) and (cps[j + 1] == cps[j] + 1 or (cps[j] == 0xD7FF and cps[j + 1] == 0xE000)):
            j += 1
        out.append("%x" % cps[i] if i == j else "%x-%x" % (cps[i], cps[j]))
        i = j + 1
    return " ".join(out)


def tokenizer_json(**fields):
    t = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
        "pre_tokenizer": None, "post_processor": None, "decoder": None,
        "model": {"type": "WordLevel", "vocab": {"[UNK]": 0, "x": 1}, "unk_token": "[UNK]"},
    }
    t.update(fields)
    return json.dumps(t)


def removed_by(pre):
    """Code points a pre-tokenizer drops when splitting with "removed"."""
    hit = []
    for lo in range(0, MAX, CHUNK):
        cps = code_points(lo, lo + CHUNK)
        covered = bytearray(len(cps))
        for _, (a, b) in pre.pre_tokenize_str("".join(map(chr, cps))):
            covered[a:b] = b"\x01" * (b - a)
        hit.extend(c for c, k in zip(cps, covered) if not k)
    return hit


def onig_class(tk, pattern):
    t = tk.Tokenizer.from_str(tokenizer_json(
        pre_tokenizer={"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Removed", "invert": False}))
    return removed_by(t.pre_tokenizer)


def rust_numeric(tk):
    pre = tk.pre_tokenizers.Digits(individual_digits=True)
    hit = []
    for lo in range(0, MAX, CHUNK):
        cps = code_points(lo, lo + CHUNK)
        s = "a" + "".join(chr(c) + "a" for c in cps)
        for piece, (a, b) in pre.pre_tokenize_str(s):
            if b - a == 1 and piece != "a":
                hit.append(cps[(a - 1) // 2])
    return sorted(hit)


def regex_word(tk):
    t = tk.Tokenizer.from_str(tokenizer_json(added_tokens=[
        {"id": 1, "content": "x", "single_word": True, "lstrip": False, "rstrip": False, "normalized": False, "special": False}]))
    hit = []
    for lo in range(0, MAX, CHUNK):
        cps = code_points(lo, lo + CHUNK)
        e = t.encode("".join("x" + chr(c) + " " for c in cps), add_special_tokens=False)
        matched = bytearray(len(cps))
        for i, (a, _) in zip(e.ids, e.offsets):
            if i == 1 and a % 3 == 0:
                matched[a // 3] = 1
        hit.extend(c for c, m in zip(cps, matched) if not m)
    return hit


def map_each(n, lo, hi, pre="", post=""):
    cps = [c for c in code_points(lo, hi) if c != 0x0A]
    parts = n.normalize_str("\n".join(pre + chr(c) + post for c in cps)).split("\n")
    if len(parts) != len(cps):
        raise RuntimeError("normalizer output for %x has %d parts, want %d" % (lo, len(parts), len(cps)))
    return cps, parts


def block_hashes(probe):
    out = []
    for lo in range(0, MAX, BLOCK):
        parts = probe(lo, lo + BLOCK)
        out.append(hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()[:16] if parts else "-")
    return " ".join(out)


CATEGORIES = ["L", "Lu", "Ll", "Lt", "Lm", "Lo", "M", "Mn", "Mc", "Me", "N", "Nd", "Nl", "No",
              "P", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "S", "Sm", "Sc", "Sk", "So",
              "Z", "Zs", "Zl", "Zp", "C", "Cc", "Cf", "Co", "Cn"]

TEXTS = [
    " \U00010D40",
    "\U0002EBF0's",
    "Garay \U00010D50\U00010D70\U00010D51\U00010D71 \U00010D40\U00010D41\U00010D42\U00010D43!",
    "CJK I: \U0002EBF0\U0002EBF1\U0002EE5D and 中文.",
    "Todhri \U000105C0\U000105C9\U000105D2\u0307 Tulu-Tigalari \U00011380\U000113B8\U000113C2",
    "Sunuwar \U00011BC0\U00011BC1 digits \U00011BF0\U00011BF1\U00011BF2\U00011BF312345",
    "Kirat Rai \U00016D43\U00016D63\U00016D70\U00016D71\U00016D72\U00016D73 Gurung Khema \U00016100\U0001611E\U00016130",
    "Outlined \U0001CCF0\U0001CCF1\U0001CCF2\U0001CCF3 Myanmar \U000116D0\U000116D1\U000116D2 legacy \U0001CC00\U0001CC01",
    "Latin \uA7CB\uA7CC\uA7CD \uA7DA\uA7DB\uA7DC Cyrillic \u1C89\u1C8A IDC \u2FFC\u2FFD\u31EF",
    "Egyptian \U00013460\U00013461 Ol Onal \U0001E5D0\U0001E5F0\U0001E5F1 \U00010D40'll \U0002EBF0\U0002EBF0\U0002EBF0\U0002EBF0'S",
]


def build(tk):
    t0 = time.time()

    def lap(what):
        print("%s: %.1f s" % (what, time.time() - t0), flush=True)

    classes = {}
    for gc in CATEGORIES:
        classes["onig \\p{%s}" % gc] = ranges(onig_class(tk, "\\p{%s}" % gc))
    for esc in "sdw":
        classes["onig \\" + esc] = ranges(onig_class(tk, "\\" + esc))
    lap("regex classes")
    classes["rust is_numeric"] = ranges(rust_numeric(tk))
    classes["rust is_whitespace"] = ranges(removed_by(tk.pre_tokenizers.WhitespaceSplit()))
    classes["regex \\w"] = ranges(regex_word(tk))
    lap("rust classes")

    lower = []
    for lo in range(0, MAX, CHUNK):
        cps, parts = map_each(tk.normalizers.Lowercase(), lo, lo + CHUNK)
        for c, p in zip(cps, parts):
            if p != chr(c):
                lower.append("%x:%s" % (c, ",".join("%x" % ord(x) for x in p)))
    lap("lowercase")

    N = tk.normalizers
    forms = {"NFC": N.NFC(), "NFD": N.NFD(), "NFKC": N.NFKC(), "NFKD": N.NFKD()}
    norm = {}
    for name, n in forms.items():
        norm[name] = block_hashes(lambda lo, hi, n=n: map_each(n, lo, hi)[1])
    norm["NFC(NFD)"] = block_hashes(lambda lo, hi: forms["NFC"].normalize_str("\n".join(map_each(forms["NFD"], lo, hi)[1])).split("\n"))
    norm["NFKC(NFKD)"] = block_hashes(lambda lo, hi: forms["NFKC"].normalize_str("\n".join(map_each(forms["NFKD"], lo, hi)[1])).split("\n"))
    norm["NFD(c+U+0334)"] = block_hashes(lambda lo, hi: map_each(forms["NFD"], lo, hi, "", "\u0334")[1])
    norm["NFD(U+0301+c)"] = block_hashes(lambda lo, hi: map_each(forms["NFD"], lo, hi, "\u0301", "")[1])
    norm["NFC(a+c+U+0301)"] = block_hashes(lambda lo, hi: map_each(forms["NFC"], lo, hi, "a", "\u0301")[1])
    lap("normalizers")

    ref = {
        "about": "HF tokenizers' own classification of every code point 0..10FFFF except surrogates; made by make_unicode_ref.mjs / make_unicode_ref.py, do not edit",
        "tokenizers": tk.__version__,
        "classes": classes,
        "lowercase": " ".join(lower),
        "normalizer_block": BLOCK,
        "normalizers": norm,
    }
    enc = {
        "about": "HF tokenizers encode ids (no special tokens); made by make_unicode_ref.mjs / make_unicode_ref.py",
        "tokenizers": tk.__version__,
        "tokenizers_under": "testdata/tokenizers/NAME/package/models/tokenizer.json",
        "cases": {},
    }
    for name in ["gemma3", "llama3", "qwen3"]:
        tok = tk.Tokenizer.from_file(os.path.join(ROOT, "testdata", "tokenizers", name, "package", "models", "tokenizer.json"))
        enc["cases"][name] = [{"text": s, "ids": tok.encode(s, add_special_tokens=False).ids} for s in TEXTS]
    lap("encode examples")
    return ref, enc


def dump(obj):
    return json.dumps(obj, indent=1, ensure_ascii=False) + "\n"


def self_test():
    """Checks the parts that need no tokenizers package."""
    assert ranges([0x41, 0x42, 0x43, 0x45, 0xD7FF, 0xE000, 0xE001]) == "41-43 45 d7ff-e001"
    assert ranges([]) == ""
    assert len(code_points(0xD000, 0xE000)) == 0x800
    assert block_hashes(lambda lo, hi: []) == " ".join(["-"] * (MAX // BLOCK))
    h = hashlib.sha256("a\nb".encode("utf-8")).hexdigest()[:16]
    assert block_hashes(lambda lo, hi: ["a", "b"]).split()[0] == h
    assert json.loads(tokenizer_json(normalizer={"type": "NFC"}))["normalizer"] == {"type": "NFC"}
    assert json.loads(dump({"a": [1]})) == {"a": [1]}
    print("self-test ok")


def main():
    if len(sys.argv) != 2:
        print("usage: make_unicode_ref.py OUTDIR | --self-test", file=sys.stderr)
        sys.exit(2)
    if sys.argv[1] == "--self-test":
        self_test()
        return
    import tokenizers as tk
    import tokenizers.normalizers  # noqa: F401
    import tokenizers.pre_tokenizers  # noqa: F401
    print("tokenizers %s (Python bindings)" % tk.__version__, flush=True)
    ref, enc = build(tk)
    with open(os.path.join(sys.argv[1], "unicode_ref.json"), "w", encoding="utf-8") as f:
        f.write(dump(ref))
    with open(os.path.join(sys.argv[1], "unicode_encode_ref.json"), "w", encoding="utf-8") as f:
        f.write(dump(enc))


if __name__ == "__main__":
    main()
