#!/usr/bin/env python3
"""Compatibility of zaya's tokenizer.json with Hugging Face `tokenizers` (label ref).

1. A tokenizer trained by `zaya tokenizer train` loads in HF and encodes every text to exactly the
   ids `zaya tokenizer encode` gives; both decode back to the text.
2. A GPT-2-style byte-level BPE trained by HF (ByteLevelBPETokenizer) on the same corpus loads in
   zaya and encodes identically, in both merges encodings ("a b" strings and ["a", "b"] pairs).
Exits 77 (skipped) when the `tokenizers` package is missing (scripts/setup.sh installs it)."""
import argparse
import glob
import json
import os
import random
import shutil
import subprocess
import sys

try:
    import tokenizers
    from tokenizers import ByteLevelBPETokenizer
except ImportError:
    print("tokenizer_compat: the `tokenizers` package is not installed for", sys.executable, "(run scripts/setup.sh)")
    sys.exit(77)

TRICKY = [
    "Hello world, it's the GNU General Public License   v3!",
    "I'll we've they're she'd I'm he's can't ''s 'S 'LL",
    "a  b   c    d\n\n\nx\t\ty \r\n z  ",
    "12345 678,90 3.14 \u0661\u0662\u0663 \u00bd \u216b",
    "na\u00efve caf\u00e9 \u0396\u03b5\u03cd\u03c2 \u041c\u043e\u0441\u043a\u0432\u0430 \u6771\u4eac \u0627\u0644\u0639\u0631\u0628\u064a\u0629",
    "emoji \U0001F600\U0001F44D\U0001F3FD flags \U0001F1E9\U0001F1EA !!! ??? ...",
    "   leading", "trailing   ", " ", "  ", "\n", "x", "",
    "\u00a0nbsp\u3000ideo\u2028ls\u0085nel", "tabs\t\tand\u000bvt\u000cff", "mixed123abc___---***",
    "don't DON'T 'll'll'''s", "\u0000nul\u0001ctl\u007f", "def f(x):\n    return x ** 2  # square\n",
]


def corpus_files():
    files = sorted(f for f in glob.glob("/usr/share/common-licenses/*") if os.path.isfile(f))
    fort = sorted(f for f in glob.glob("/usr/share/games/fortunes/*")
                  if os.path.isfile(f) and not f.endswith((".dat", ".u8")))
    return files + fort[:20]


def sample_texts(files, n, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        f = rng.choice(files)
        data = open(f, "rb").read().decode("utf-8", "replace")
        if not data:
            continue
        a = rng.randrange(len(data))
        out.append(data[a:a + rng.randrange(1, 3000)])
    return out


def zaya_encode(zaya, tok, text, work):
    path = os.path.join(work, "text.txt")
    with open(path, "wb") as f:
        f.write(text.encode("utf-8"))
    r = subprocess.run([zaya, "tokenizer", "encode", "-t", tok, path], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"zaya tokenizer encode failed: {r.stderr}")
    return [int(x) for x in r.stdout.split()]


def zaya_decode(zaya, tok, ids):
    r = subprocess.run([zaya, "tokenizer", "decode", "-t", tok], input=" ".join(map(str, ids)).encode(),
                       capture_output=True)
    if r.returncode != 0:
        raise RuntimeError(f"zaya tokenizer decode failed: {r.stderr.decode(errors='replace')}")
    return r.stdout


def compare(zaya, tok_path, texts, work, label):
    hf = tokenizers.Tokenizer.from_file(tok_path)
    bad = 0
    for t in texts:
        zi = zaya_encode(zaya, tok_path, t, work)
        hi = hf.encode(t, add_special_tokens=False).ids
        if zi != hi:
            bad += 1
            k = next((i for i, (a, b) in enumerate(zip(zi, hi)) if a != b), min(len(zi), len(hi)))
            print(f"{label}: MISMATCH on {t[:50]!r}: first difference at {k}: zaya {zi[k:k+5]} hf {hi[k:k+5]}")
        elif hf.decode(hi, skip_special_tokens=False) != t or zaya_decode(zaya, tok_path, zi) != t.encode("utf-8"):
            bad += 1
            print(f"{label}: decode does not give back {t[:50]!r}")
    print(f"{label}: {len(texts) - bad}/{len(texts)} texts identical ({sum(len(t) for t in texts)} chars)")
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--zaya", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    files = corpus_files()
    texts = TRICKY + sample_texts(files, 30, 1234)
    print(f"tokenizers {tokenizers.__version__}; corpus {len(files)} files")
    bad = 0

    # 1. zaya-trained tokenizer.json opens in HF.
    zdir = os.path.join(args.work, "zaya_tok")
    r = subprocess.run([args.zaya, "tokenizer", "train", "--vocab-size", "3000", "--bos", "<|bos|>", "--eos",
                        "<|eos|>", "--pad", "<|pad|>", "-o", zdir] + files, capture_output=True, text=True)
    print(r.stdout, end="")
    if r.returncode != 0:
        print("zaya tokenizer train failed:", r.stderr)
        return 1
    ztok = os.path.join(zdir, "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(ztok)
    if hf.get_vocab_size() != 3000 or hf.token_to_id("<|eos|>") != 2998:
        print("HF sees vocab", hf.get_vocab_size(), "eos", hf.token_to_id("<|eos|>"))
        bad += 1
    bad += compare(args.zaya, ztok, texts, args.work, "zaya-trained")

    # 2. HF-trained GPT-2-style tokenizer loads in zaya, in both merges encodings.
    hdir = os.path.join(args.work, "hf_tok")
    os.makedirs(hdir)
    bpe = ByteLevelBPETokenizer()
    bpe.train(files, vocab_size=3000, min_frequency=2, special_tokens=["<|endoftext|>"], show_progress=False)
    htok = os.path.join(hdir, "tokenizer.json")
    bpe.save(htok)
    bad += compare(args.zaya, htok, texts, args.work, "hf-trained")
    doc = json.load(open(htok))
    merges = doc["model"]["merges"]
    if merges and isinstance(merges[0], list):
        doc["model"]["merges"] = [" ".join(m) for m in merges]
    else:
        doc["model"]["merges"] = [m.split(" ") for m in merges]
    ldir = os.path.join(args.work, "hf_tok_other_merges")
    os.makedirs(ldir)
    ltok = os.path.join(ldir, "tokenizer.json")
    json.dump(doc, open(ltok, "w"), ensure_ascii=False)
    bad += compare(args.zaya, ltok, texts, args.work, "hf-trained, other merges encoding")
    print("tokenizer_compat:", "FAILED" if bad else "ok")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
