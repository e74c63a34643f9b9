#!/usr/bin/env python3
"""Writes the golden-test corpus (testdata/corpus/*.txt, raw bytes) and the
fragment list the 1 MB documents are generated from (doc_fragments.json).
Run from this directory: python3 make_corpus.py. Deterministic; the files are
committed, so this only needs re-running when the corpus changes."""
import json, os

cases = {
"prose_en": (
    "It's a truth universally acknowledged, that a single man in possession of a good fortune, "
    "must be in want of a wife. I'M SURE they'll say we'RE wrong; you'VE heard it, haven't you? "
    "\"Quotes\", 'single quotes', (parentheses) [brackets] {braces} -- em—dash … ellipsis. "
    "Mr. O'Neil paid $1,234.56 on 2024-06-01 at 10:30am; 50% off!\n"
    "Second paragraph: e-mail me at someone@example.com or visit https://example.com/path?q=1&r=2#frag.\n"),
"code_go": (
    "package main\n\nimport (\n\t\"fmt\"\n\t\"strings\"\n)\n\n"
    "// Greet returns a greeting.\nfunc Greet(name string) string {\n"
    "\tif name == \"\" {\n\t\treturn \"hello, world\"\n\t}\n"
    "\treturn fmt.Sprintf(\"hello, %s!\\n\", strings.ToUpper(name))\n}\n\n"
    "func main() {\n\tfor i := 0; i < 10; i++ {\n\t\tfmt.Println(Greet(\"gopher\"), i*i)\n\t}\n}\n"),
"code_py_json": (
    "def fib(n: int) -> int:\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"
    "    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n\n\n"
    "if __name__ == '__main__':\n    print([fib(i) for i in range(20)])\n"
    "    data = {\"key\": [1, 2.5, -3e10, null, true], \"nested\": {\"a\": \"b\"}}\n"
    "    x = lambda y: y**2 // 3 % 7 != 0 and y >= 1 or y <= -1\n"),
"cjk": (
    "人工智能是计算机科学的一个分支。它企图了解智能的实质，并生产出一种新的能以人类智能相似的方式做出反应的智能机器。\n"
    "日本語のテキスト：ひらがな、カタカナ、漢字を混ぜて書きます。東京は日本の首都です。\n"
    "한국어 문장도 포함합니다. 서울은 대한민국의 수도입니다.\n"
    "繁體中文：這是一個測試。全角数字１２３と全角スペース　です。"),
"emoji": (
    "Emoji: 😀 😃 😄 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 🇫🇷🇯🇵 ❤️ ✔︎ 🤖🦀🐍 🫠🫨 "
    "keycap 1️⃣ #️⃣, text ☺ vs emoji ☺️, sequence👩🏾‍💻end."),
"combining": (
    "Combining: e\u0301 a\u0300 o\u0308 n\u0303 (NFD) vs é à ö ñ (NFC); "
    "Z\u0351\u036b\u0343a\u0310l\u0367g\u0310o zalgo; Tiếng Việt có dấu; "
    "हिन्दी देवनागरी; العربية مع التشكيل: مُحَمَّد; עִבְרִית; ภาษาไทย; "
    "Ångström (\u212b) vs (\u00c5); ﬁ ligature; Ⅻ; ½."),
"whitespace": (
    "  leading spaces\n\n\ntriple newline\r\nwindows line\rold mac\n"
    "\t\ttabs\t \t mixed \t\n    four spaces\n        eight spaces\n"
    "trailing   \n   \n\t\n \n"
    "word  two   three    four\u00a0nbsp\u3000ideographic\u2028linesep\u2029parasep "
    "\u2003em space\u200bzwsp end   "),
"special_tokens": (
    "<bos>Hello<eos> <pad><start_of_turn>user\nHi there<end_of_turn>\n<start_of_turn>model\nHey!<end_of_turn>"
    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
    "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\nhmm\n</think>\n\nA<|im_end|>"
    " partial: <|im_ <end_of_turn <|eot_id <<bos>> <bos><bos> <unused12> <mask> [multimodal] "
    "<tool_call>{}</tool_call> <|endoftext|> <image_soft_token> <start_of_image>"),
"invalid_utf8": None,  # written below as raw bytes
"numbers": (
    "1234567890 3.14159 1,000,000 0x1F 2024-06-01 12:34:56 -42 +7 1e-9 "
    "١٢٣٤ ۱۲۳ १२३ ⅫⅣ ²³₄ ½¾ 一二三 〇 12345678901234567890"),
"markdown": (
    "# Title\n\n## Sub-title\n\n- item one\n- item **two**\n  - nested _three_\n1. first\n2. second\n\n"
    "| a | b |\n|---|---|\n| 1 | 2 |\n\n> quote\n\n```python\nprint('x')\n```\n\n"
    "[link](https://example.org) and `inline code` and ~~strike~~.\n\n---\n"),
"repeats": (
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa "
    "supercalifragilisticexpialidocious antidisestablishmentarianism "
    "!!!!!!!!!!!!!!!! ........ -------- ======== ________ ******** "
    "ababababababababababab 00000000000000000000 "
    "https://www.example.com/a/very/long/path/with_many-segments/index.html?x=1"),
"rare_bytes": (
    "controls:\x00\x01\x02\x07\x08\x0b\x0c\x1b[0m\x1f\x7f end; private use \ue000\uf8ff; "
    "Linear B \U00010000\U00010001; math \U0001d400\U0001d538; "
    "cuneiform \U00012000; noncharacter-ish \ufffd; tag \U000e0041."),
"metaspace_chars": "literal ▁ lower-one-eighth ▁▁ and Ġ Ċ byte-level chars, ĠĠ twice",
"edge_unicode": (
    "nel\u0085here bom\ufeffhere zwsp\u200bhere it'ſ Kelvin\u212a 'S 'ſ "
    "\u0085\u0085 x \ufeff\ufeff y \u180e mongolian \u00ad soft-hyphen"),
"empty": "",
"single_space": " ",
"single_newline": "\n",
"only_spaces": "     ",
"leading_space_word": " hello",
}

os.makedirs("corpus", exist_ok=True)
for name, text in cases.items():
    if name == "invalid_utf8":
        data = (b"abc \xff\xfe def \xe2\x82 ghi \xc3\x28 jkl \xed\xa0\x80 mno \xf0\x9f\x98 pqr "
                b"\xe2\x82\xac ok \xf4\x90\x80\x80 \xc0\xaf \xe0\x80\xaf end\x80\xbf\xe2")
    else:
        data = text.encode("utf-8")
    with open(os.path.join("corpus", name + ".txt"), "wb") as f:
        f.write(data)

# Fragments the deterministic documents are built from (see gendoc in
# make_golden.mjs and golden_test.go): prose, code, CJK, emoji, numbers,
# punctuation and whitespace runs.
fragments = [
    "the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "tokenizer", "model",
    "attention", "is", "all", "you", "need", "Hello", "World", "It's", "don't", "WE'LL",
    "transformer", "inference", "cache", "window", "sliding", "memory", "bandwidth",
    "func", "return", "if", "else", "for", "{", "}", "(", ")", "[", "]", ";", ":", ",", ".",
    "==", "!=", "<=", ">=", "->", "=>", "::", "&&", "||", "//", "/*", "*/", "#", "@", "$",
    "0", "7", "42", "314", "2718", "65536", "1,000", "3.14", "1e-5", "0xFF",
    "人工智能", "机器学习", "東京", "ひらがな", "カタカナ", "한국어", "中文", "。", "、",
    "😀", "👍🏽", "👨‍👩‍👧", "🇯🇵", "❤️", "🦀",
    "e\u0301", "ñ", "Ångström", "naïve", "café", "Ελληνικά", "русский", "العربية", "हिन्दी",
    "<bos>", "<end_of_turn>", "<|eot_id|>", "<|im_end|>", "<think>",
    "\u00a0", "\u3000", "\ufffd",
]
separators = [" ", " ", " ", " ", " ", "", "", "\n", "\n\n", "\t", "  ", "    ", "\r\n", " \n"]
with open("doc_fragments.json", "w", encoding="utf-8") as f:
    json.dump({"fragments": fragments, "separators": separators}, f, ensure_ascii=False, indent=0)
    f.write("\n")
