#!/usr/bin/env python3
"""zaya reads the common tokenizer.json families exactly as Hugging Face `tokenizers` does.

Builds tokenizers with HF `tokenizers` on the built-in corpus (licences + fortunes, as
tokenizer_compat.py) in each style, writes their tokenizer.json and checks, over adversarial text
(multilingual scripts, emoji and ZWJ sequences, combining marks, long whitespace and digit runs, code,
special-token text, random strings over every character class the patterns tell apart), that `zaya tokenizer encode` gives exactly HF's ids and `zaya tokenizer decode`
exactly HF's text:
  sp-legacy    Llama-2 legacy: Prepend+Replace normalizer, no pre-tokenizer, byte fallback, unk fused,
               Replace/ByteFallback/Fuse/Strip decoder, "<s> $A" template
  gemma        Replace normalizer, no pre-tokenizer, byte fallback, Replace/ByteFallback/Fuse decoder
  sp-metaspace Metaspace(prepend first, no split) pre-tokenizer, Metaspace decoder, lstrip added token
  sp-split     Metaspace(prepend always, split) pre-tokenizer
  llama3       Split(Llama-3 regex, Isolated) + ByteLevel, ignore_merges, "<|begin_of_text|> $A"
  o200k        the same with the o200k (GPT-4o) regex
  gpt2         ByteLevel BPE with a non-special added token
  qwen2        NFC normalizer + Split(Qwen2 regex: single digits, Isolated) + ByteLevel (Qwen2/2.5/3)
  sp-nfkc, sp-nfd, sp-nfkd   sp-legacy with NFKC / NFD / NFKD in front of its normalizer
  openllama    sp-legacy whose added tokens are normalized: true (decoded through the normalizer)
  smollm       Sequence[Digits(individual_digits), ByteLevel(use_regex)] (SmolLM, StarCoder)
  digits-noregex  Sequence[Digits(individual_digits), ByteLevel(use_regex=false)]
  trunc-pad    llama3 with truncation (max_length, Left) and padding (BatchLongest, multiple of 8)
Two modes each: zaya's default against HF with encode_special_tokens=True and no template, and
zaya --parse-special --add-special against HF's default encode. Invalid UTF-8 (which HF cannot take:
it takes str) is checked on zaya's side only: no failure, and byte-exact round trips where the
pipeline has no normalizer that changes text.

--bench also runs `zaya tokenizer bench` (zaya vs HF MB/s, one thread each) on every style.
Exits 77 (skipped) without the `tokenizers` package."""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import tokenizers
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers, Regex
    from tokenizers import AddedToken
except ImportError:
    print("tokenizer_families: the `tokenizers` package is not installed for", sys.executable, "(run scripts/setup.sh)")
    sys.exit(77)
from tokenizer_compat import corpus_files, sample_texts, zaya_decode  # noqa: E402

QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
         r"\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
          r"\s*[\r\n]+|\s+(?!\S)|\s+")
O200K = "|".join([
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"\p{N}{1,3}", r" ?[^\s\p{L}\p{N}]+[\r\n/]*", r"\s*[\r\n]+", r"\s+(?!\S)", r"\s+"])

# Pieces of random adversarial strings: every character class the patterns distinguish.
PIECES = ["a", "Z", "\u00e9", "\u01c5", "\u02b0", "\u4e2d", "\u05e7", "\u0301", "\u0903", "1", "\u0663", "\u00bd",
          " ", "  ", "\t", "\n", "\r\n", "\r", "\u00a0", "\u3000", "'s", "'T", "'ll", "'", "!", "/", "-", "_", "\U0001F600",
          "\u200d", "\u2581", "<s>", "</s>", "<|begin_of_text|>", "<tool>", "<mask>", "<0x41>", "\u017f", "Hello", "WORLD",
          "camelCase", "123456", "\u0e2a\u0e27", "\u0939\u093f"]


def random_texts(n, seed):
    rng = random.Random(seed)
    return ["".join(rng.choice(PIECES) for _ in range(rng.randrange(1, 25))) for _ in range(n)]


def random_code_points(n, seed):
    """Random assigned and unassigned code points of planes 0-3 and 14 (no surrogates), with letters
    and marks added in Unicode 15 and 16 (which HF's regex engine knows), between ASCII context."""
    rng = random.Random(seed)
    late = "\u1c89\u1c8a\U00011f04\U0002ebf0\U0001e4d0\u0cf3\U00010efd"
    out = []
    for _ in range(n):
        s = []
        for _ in range(rng.randrange(1, 30)):
            r = rng.random()
            if r < 0.15:
                s.append(rng.choice(" a,1\n'"))
            elif r < 0.25:
                s.append(rng.choice(late))
            else:
                plane = rng.choice([0, 0, 0, 1, 2, 3, 14])
                cp = plane * 0x10000 + rng.randrange(0x10000)
                if 0xD800 <= cp <= 0xDFFF:
                    cp = 0x20AC
                s.append(chr(cp))
        out.append("".join(s))
    return out

ADVERSARIAL = [
    "Hello world, it's the GNU General Public License   v3!",
    "I'll we've they're she'd I'm he's can't ''s 'S 'LL 'Re 'ſ \u017f",
    "a  b   c    d\n\n\nx\t\ty \r\n z  ", "   leading", "trailing   ", " ", "  ", "\n", "x", "",
    "12345 678,90 3.14159265358979 1000000000000 \u0661\u0662\u0663\u0664 \u00bd \u216b \uff11\uff12",
    "na\u00efve caf\u00e9 \u0396\u03b5\u03cd\u03c2 \u041c\u043e\u0441\u043a\u0432\u0430",
    "\u6771\u4eac\u90fd\u6e0b\u8c37\u533a \u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8 \ud55c\uad6d\uc5b4 \u4e2d\u6587\u5b57\u7b26",
    "\u0627\u0644\u0639\u0631\u0628\u064a\u0629 \u0645\u0631\u062d\u0628\u0627\u064b \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
    "\u0939\u093f\u0928\u094d\u0926\u0940 \u0926\u0947\u0935\u0928\u093e\u0917\u0930\u0940 \u0915\u094d\u0937\u093f",
    "\u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22 \u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e04\u0e23\u0e31\u0e1a",
    "emoji \U0001F600\U0001F44D\U0001F3FD flags \U0001F1E9\U0001F1EA family \U0001F468\u200D\U0001F469\u200D\U0001F467 "
    "\u2764\ufe0f !!! ??? ...",
    "e\u0301 a\u0308\u0304 \u1e9b\u0323 Zalgo: Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319",
    "\u00a0nbsp\u3000ideo\u2028ls\u0085nel \u200b zwsp \u2581already\u2581meta \u2581\u2581",
    "tabs\t\tand\u000bvt\u000cff", "mixed123abc___---***", "\u0000nul\u0001ctl\u007f",
    " " * 40 + "x" + "\t" * 17 + "\n" * 9 + " y", "9" * 50 + " " + "0123456789" * 5,
    "def f(x):\n    return x ** 2  # square\n\nclass A:\n\tpass\r\n",
    "if (a != b && c <= d) { printf(\"%d\\n\", a[i++]); } // done\n",
    "<s> starts</s> and <s>inside<s>, <|begin_of_text|>hi<|end_of_text|> <tool>x<tool> <mask> y  <mask>  z",
    "<0x41> <unk> <bos> <eos>",
    "\u4e2dA \u4e2dWORLD \u02b0Z! a\u0301B\u0301C \u01c5a \u01c5A\u02b0 'sup 'Sup 'LLama x'\u017fup it'Sup they'LL ABC's XYZ'LL", "\ufffd replacement \U00010348 gothic \U0001D11E music",
]


def write(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f, ensure_ascii=False)


def train_sp(texts, vocab, specials):
    """SentencePiece-style BPE: trained on Metaspace-split words, byte tokens <0x00>..<0xFF> in the model."""
    tok = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>", fuse_unk=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    byte_toks = [f"<0x{b:02X}>" for b in range(256)]
    tr = trainers.BpeTrainer(vocab_size=vocab, min_frequency=2, special_tokens=specials + byte_toks,
                             show_progress=False)
    tok.train_from_iterator(texts, tr)
    doc = json.loads(tok.to_str())
    # Byte tokens are plain vocabulary entries in converted SentencePiece models, not added tokens.
    doc["added_tokens"] = [a for a in doc["added_tokens"] if a["content"] not in byte_toks]
    return doc


def template(tok_doc, single, specials):
    ids = {a["content"]: a["id"] for a in tok_doc["added_tokens"]}
    return json.loads(processors.TemplateProcessing(
        single=single, special_tokens=[(s, ids[s]) for s in specials]).__getstate__())


def build_styles(work, texts):
    out = {}
    sp = train_sp(texts, 3000, ["<unk>", "<s>", "</s>"])

    d = json.loads(json.dumps(sp))
    d["normalizer"] = json.loads(normalizers.Sequence([normalizers.Prepend("\u2581"),
                                                       normalizers.Replace(" ", "\u2581")]).__getstate__())
    d["pre_tokenizer"] = None
    d["decoder"] = json.loads(decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(),
                                                 decoders.Fuse(), decoders.Strip(" ", 1, 0)]).__getstate__())
    d["post_processor"] = template(d, "<s> $A", ["<s>"])
    out["sp-legacy"] = d

    g = json.loads(json.dumps(sp))
    g["normalizer"] = json.loads(normalizers.Replace(" ", "\u2581").__getstate__())
    g["pre_tokenizer"] = None
    g["model"]["fuse_unk"] = False
    g["decoder"] = json.loads(decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(),
                                                 decoders.Fuse()]).__getstate__())
    g["post_processor"] = template(g, "<s> $A </s>", ["<s>", "</s>"])
    # merges in the older "a b" form
    g["model"]["merges"] = [" ".join(m) if isinstance(m, list) else m for m in g["model"]["merges"]]
    out["gemma"] = g

    m = json.loads(json.dumps(sp))
    m["normalizer"] = None
    m["pre_tokenizer"] = json.loads(pre_tokenizers.Metaspace("\u2581", "first", split=False).__getstate__())
    m["decoder"] = json.loads(decoders.Metaspace("\u2581", "first", split=False).__getstate__())
    nid = len(m["model"]["vocab"])
    m["added_tokens"].append({"id": nid, "content": "<mask>", "single_word": False, "lstrip": True, "rstrip": False,
                              "normalized": False, "special": True})
    m["added_tokens"].append({"id": nid + 1, "content": "<tool>", "single_word": False, "lstrip": False,
                              "rstrip": True, "normalized": False, "special": False})
    out["sp-metaspace"] = m

    s = json.loads(json.dumps(sp))
    s["normalizer"] = None
    s["pre_tokenizer"] = json.loads(pre_tokenizers.Metaspace("\u2581", "always", split=True).__getstate__())
    s["decoder"] = json.loads(decoders.Metaspace("\u2581", "always", split=True).__getstate__())
    out["sp-split"] = s

    for form in ("NFKC", "NFD", "NFKD"):
        n = json.loads(json.dumps(out["sp-legacy"]))
        n["normalizer"]["normalizers"].insert(0, {"type": form})
        out["sp-" + form.lower()] = n
    ol = json.loads(json.dumps(out["sp-legacy"]))
    for a in ol["added_tokens"]:
        a["normalized"] = True
    out["openllama"] = ol

    out["llama3"] = regex_bytelevel(texts, LLAMA3)
    q = regex_bytelevel(texts, QWEN2)
    q["normalizer"] = json.loads(normalizers.NFC().__getstate__())
    out["qwen2"] = q
    tp = json.loads(json.dumps(out["llama3"]))
    tp["truncation"] = {"direction": "Left", "max_length": 24, "strategy": "LongestFirst", "stride": 3}
    tp["padding"] = {"strategy": "BatchLongest", "direction": "Right", "pad_to_multiple_of": 8,
                     "pad_id": tp["added_tokens"][1]["id"], "pad_type_id": 0, "pad_token": tp["added_tokens"][1]["content"]}
    out["trunc-pad"] = tp
    out["smollm"] = digits_bytelevel(texts, True)
    out["digits-noregex"] = digits_bytelevel(texts, False)
    out["o200k"] = regex_bytelevel(texts, O200K)

    g2 = tokenizers.ByteLevelBPETokenizer()
    g2.train_from_iterator(texts, vocab_size=3000, min_frequency=2, special_tokens=["<|endoftext|>"],
                           show_progress=False)
    g2.add_tokens([AddedToken("<tool>", normalized=False, special=False)])
    out["gpt2"] = json.loads(g2.to_str())

    paths = {}
    for name, doc in out.items():
        d = os.path.join(work, name)
        os.makedirs(d, exist_ok=True)
        paths[name] = os.path.join(d, "tokenizer.json")
        write(paths[name], doc)
    return paths


def regex_bytelevel(texts, pattern):
    """tiktoken-style: Split(regex, Isolated) + ByteLevel(use_regex=false), ignore_merges, BOS template."""
    l3 = Tokenizer(models.BPE(ignore_merges=True))
    l3.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)])
    l3.decoder = decoders.ByteLevel()
    specials = ["<|begin_of_text|>", "<|end_of_text|>"] + [f"<|reserved_special_token_{i}|>" for i in range(4)]
    l3.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=3000, min_frequency=2, special_tokens=specials, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    l3.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_of_text|> $A", special_tokens=[
            ("<|begin_of_text|>", l3.token_to_id("<|begin_of_text|>"))])])
    return json.loads(l3.to_str())


def digits_bytelevel(texts, use_regex):
    """SmolLM-style: Digits(individual_digits) then ByteLevel, an <|endoftext|> special token."""
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=use_regex)])
    t.decoder = decoders.ByteLevel()
    t.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=3000, min_frequency=2, special_tokens=["<|endoftext|>", "<|im_start|>"], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return json.loads(t.to_str())


def zaya_encode(zaya, tok, path, extra):
    r = subprocess.run([zaya, "tokenizer", "encode", "-t", tok, path] + extra, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"zaya tokenizer encode failed: {r.stderr}")
    return [int(x) for x in r.stdout.split()]


def check_style(zaya, name, tok_path, texts, work):
    bad = 0
    hf_plain = Tokenizer.from_file(tok_path)
    hf_plain.encode_special_tokens = True
    hf = Tokenizer.from_file(tok_path)
    tpath = os.path.join(work, "text.txt")
    nchars = 0
    for t in texts:
        with open(tpath, "wb") as f:
            f.write(t.encode("utf-8"))
        nchars += len(t)
        for label, h, extra, add in (("default", hf_plain, [], False),
                                     ("--parse-special --add-special", hf, ["--parse-special", "--add-special"], True)):
            zi = zaya_encode(zaya, tok_path, tpath, extra)
            hi = h.encode(t, add_special_tokens=add).ids
            if zi != hi:
                bad += 1
                k = next((i for i, (a, b) in enumerate(zip(zi, hi)) if a != b), min(len(zi), len(hi)))
                print(f"{name} {label}: ENCODE MISMATCH on {t[:40]!r}: at {k}: zaya {zi[k:k+6]} hf {hi[k:k+6]}")
                continue
            zd = zaya_decode(zaya, tok_path, zi)
            hd = h.decode(hi, skip_special_tokens=False).encode("utf-8")
            # zaya decodes to the bytes the ids stand for; HF returns a str, invalid UTF-8 (a sequence
            # truncated inside a character) replaced by U+FFFD per maximal subpart as Rust's
            # from_utf8_lossy does, which Python's "replace" handler also follows
            if zd != hd and zd.decode("utf-8", "replace").encode("utf-8") == hd:
                zd = hd
            if zd != hd:
                bad += 1
                print(f"{name} {label}: DECODE MISMATCH on {t[:40]!r}: zaya {zd[:60]!r} hf {hd[:60]!r}")
    print(f"{name}: {2 * len(texts) - bad}/{2 * len(texts)} encodings identical ({nchars} chars)")
    if name in ("llama3", "o200k", "gpt2", "qwen2", "smollm", "digits-noregex"):
        bad += check_pre_tokens(zaya, name, tok_path, texts, work)
    return bad


def check_pre_tokens(zaya, name, tok_path, texts, work):
    """The regex scanners split exactly as HF's regex (ids alone would hide boundary differences
    that no merge crosses)."""
    pre = Tokenizer.from_file(tok_path).pre_tokenizer
    tpath = os.path.join(work, "text.txt")
    bad = 0
    for t in texts:
        with open(tpath, "wb") as f:
            f.write(t.encode("utf-8"))
        r = subprocess.run([zaya, "tokenizer", "encode", "-t", tok_path, "--pre-tokens", tpath],
                           capture_output=True, text=True)
        got = [int(x) for x in r.stdout.split()]
        want = [len(t[a:b].encode("utf-8")) for _, (a, b) in pre.pre_tokenize_str(t)]
        if r.returncode != 0 or got != want:
            bad += 1
            print(f"{name}: PRE-TOKEN MISMATCH on {t[:40]!r}: zaya {got[:12]} hf {want[:12]} {r.stderr}")
    print(f"{name}: {len(texts) - bad}/{len(texts)} pre-tokenizations identical")
    return bad


def check_invalid_utf8(zaya, name, tok_path, work):
    """HF cannot take these bytes; zaya must encode them (byte tokens) and, where no normalizer
    changes the text, decode them back exactly."""
    rng = random.Random(7)
    data = bytes(rng.randrange(256) for _ in range(3000)) + b"\xff\xfe ok \xc3 \xe2\x96 \xf0\x9f\x98"
    path = os.path.join(work, "invalid.bin")
    with open(path, "wb") as f:
        f.write(data)
    ids = zaya_encode(zaya, tok_path, path, [])
    vocab = Tokenizer.from_file(tok_path).get_vocab_size(with_added_tokens=True)
    if not ids or not all(0 <= i < vocab for i in ids):
        print(f"{name}: invalid UTF-8: ids out of range")
        return 1
    back = zaya_decode(zaya, tok_path, ids)
    exact = name in ("gemma", "llama3", "o200k", "gpt2", "smollm", "digits-noregex")
    if exact and back != data.replace("\u2581".encode(), b" "):
        print(f"{name}: invalid UTF-8 does not round-trip ({len(back)} of {len(data)} bytes)")
        return 1
    print(f"{name}: invalid UTF-8: {len(data)} bytes -> {len(ids)} ids" + (", exact round trip" if exact else ""))
    return 0


def check_split_behaviours(zaya, paths, work):
    """Split with String patterns: every behaviour and invert, before ByteLevel (both use_regex) on the
    llama3 vocabulary and alone on the sp-legacy one; ids as HF's."""
    texts = ["the-final--countdown", "--a-b--", "-", "a", "Hello  world's 12345 -- ok\n\n x", "  lead-trail-  ",
             "a--b---c----d", "x - y -- z"]
    l3 = json.load(open(paths["llama3"]))
    sp = json.load(open(paths["sp-legacy"]))
    path = os.path.join(work, "split", "tokenizer.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    bad = n = 0
    for beh in ["Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous"]:
        for inv in (False, True):
            for ur in (False, True, None):
                if ur is None:
                    d = json.loads(json.dumps(sp))
                    d["pre_tokenizer"] = {"type": "Split", "pattern": {"String": "\u2581"}, "behavior": beh, "invert": inv}
                else:
                    d = json.loads(json.dumps(l3))
                    d["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
                        {"type": "Split", "pattern": {"String": "-"}, "behavior": beh, "invert": inv},
                        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": ur}]}
                write(path, d)
                h = Tokenizer.from_file(path)
                for t in texts:
                    n += 1
                    r = subprocess.run([zaya, "tokenizer", "encode", "-t", path, "--text", t], capture_output=True, text=True)
                    got = [int(x) for x in r.stdout.split()] if r.returncode == 0 else r.stderr
                    want = h.encode(t, add_special_tokens=False).ids
                    if got != want:
                        bad += 1
                        print(f"split {beh} invert={inv} use_regex={ur}: MISMATCH on {t!r}: zaya {got} hf {want}")
    print(f"split behaviours: {n - bad}/{n} encodings identical")
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--zaya", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--bench", action="store_true", help="also measure zaya vs HF MB/s on every style")
    ap.add_argument("--only", action="append", help="check only these styles (repeatable; default: all)")
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    files = corpus_files()
    corpus = []
    for f in files:
        corpus.extend(open(f, "rb").read().decode("utf-8", "replace").splitlines())
    corpus.extend(ADVERSARIAL * 20)
    paths = build_styles(args.work, corpus)
    if args.only:
        paths = {k: v for k, v in paths.items() if k in args.only}
    texts = ADVERSARIAL + sample_texts(files, 12, 99) + random_texts(60, 5) + random_code_points(30, 11)
    print(f"tokenizers {tokenizers.__version__}; {len(corpus)} training lines; {len(texts)} test texts")
    bad = 0
    for name, p in paths.items():
        bad += check_style(args.zaya, name, p, texts, args.work)
        bad += check_invalid_utf8(args.zaya, name, p, args.work)
    if "llama3" in paths and "sp-legacy" in paths:
        bad += check_split_behaviours(args.zaya, paths, args.work)
    if args.bench:
        inputs = ["/usr/share/common-licenses"]
        for name, p in paths.items():
            r = subprocess.run([args.zaya, "tokenizer", "bench", "-t", p, "--repeat", "2", "--max-bytes", "2M",
                                "-o", os.path.join(args.work, "bench-" + name)] + inputs,
                               capture_output=True, text=True)
            print(f"--- bench {name}\n{r.stdout}", end="")
            if r.returncode != 0 or "ids: identical" not in r.stdout:
                print(f"bench {name}: failed or ids differ: {r.stderr}")
                bad += 1
    print("tokenizer_families:", "FAILED" if bad else "ok")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
