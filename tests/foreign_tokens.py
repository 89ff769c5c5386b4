#!/usr/bin/env python3
"""Writes token files the way other trainers' writers do, for test_foreign.

Re-implemented from the published formats (not imported: neither package installs here):
  * Megatron-LM's indexed-dataset builder (megatron/core/datasets/indexed_dataset.py): tokens of every
    added sequence appended to PREFIX.bin in the dataset dtype; end_document() appends the sequence
    count to the document indices; finalize writes PREFIX.idx = b"MMIDIDX\\0\\0", u64 version 1, u8
    dtype code, u64 sequence count, u64 document-index count, int32 lengths, int64 byte pointers
    (running sum of length * itemsize), int64 document indices, and int8 modes when given.
  * llm.c's write_datafile (dev/data/data_common.py): 256 int32 header entries (magic, version, token
    count), then the ids (gpt-2: magic 20240520, version 1, uint16; llama-3: magic 20240801,
    version 7, uint32); its dataset scripts put the EOT id before every document.

Usage: foreign_tokens.py OUT_DIR. Writes the files, one expected-documents file per good case
(int64 little-endian: document count, then per document its length and ids) and OUT_DIR/cases.tsv:
path, vocab_size, eos_id, expected file or '-', error substring or '-' (tab separated).
"""
import os
import struct
import sys

import numpy as np

DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.float64, 7: np.float32, 8: np.uint16}


class MegatronBuilder:
    def __init__(self, prefix, dtype):
        self.prefix, self.dtype = prefix, dtype
        self.bin = open(prefix + ".bin", "wb")
        self.lengths, self.doc_indices, self.modes = [], [0], []

    def add_item(self, ids, mode=0):
        arr = np.array(ids, dtype=self.dtype)
        self.bin.write(arr.tobytes(order="C"))
        self.lengths.append(arr.size)
        self.modes.append(mode)

    def end_document(self):
        self.doc_indices.append(len(self.lengths))

    def finalize(self, with_modes=False):
        self.bin.close()
        code = [c for c, t in DTYPES.items() if t == self.dtype][0]
        item = np.dtype(self.dtype).itemsize
        pointers, cur = [], 0
        for n in self.lengths:
            pointers.append(cur)
            cur += n * item
        with open(self.prefix + ".idx", "wb") as f:
            f.write(b"MMIDIDX\x00\x00")
            f.write(struct.pack("<Q", 1))
            f.write(struct.pack("<B", code))
            f.write(struct.pack("<Q", len(self.lengths)))
            f.write(struct.pack("<Q", len(self.doc_indices)))
            f.write(np.array(self.lengths, dtype=np.int32).tobytes())
            f.write(np.array(pointers, dtype=np.int64).tobytes())
            f.write(np.array(self.doc_indices, dtype=np.int64).tobytes())
            if with_modes:
                f.write(np.array(self.modes, dtype=np.int8).tobytes())


def llmc_write(path, toks, model="gpt-2"):
    magic, version, dt = (20240520, 1, np.uint16) if model == "gpt-2" else (20240801, 7, np.uint32)
    header = np.zeros(256, dtype=np.int32)
    header[0], header[1], header[2] = magic, version, len(toks)
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(np.array(toks, dtype=dt).tobytes())


def write_expect(path, docs):
    out = [len(docs)]
    for d in docs:
        out.append(len(d))
        out.extend(int(x) for x in d)
    np.array(out, dtype="<i8").tofile(path)


def random_docs(rng, n, vocab, eos, max_len=40, min_len=1):
    docs = []
    for _ in range(n):
        ln = int(rng.integers(min_len, max_len + 1))
        d = rng.integers(0, vocab, size=ln)
        d[d == eos] = (eos + 1) % vocab  # documents themselves never hold the separator
        docs.append([int(x) for x in d])
    return docs


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(20240520)
    cases = []

    def good(path, vocab, eos, docs, name):
        exp = os.path.join(out, name + ".expect")
        write_expect(exp, docs)
        cases.append((path, vocab, eos, exp, "-"))

    def bad(path, vocab, eos, err):
        cases.append((path, vocab, eos, "-", err))

    # Megatron, GPT-2 style: uint16, each document split into sentences (several sequences), EOD appended
    # to the last one (preprocess_data.py --append-eod): the EOD becomes the separator.
    vocab, eos = 50257, 50256
    docs = random_docs(rng, 30, vocab, eos, max_len=60)
    docs[3] = [vocab - 2] + docs[3]  # the largest id below the EOD
    p = os.path.join(out, "mg_u16_eod")
    b = MegatronBuilder(p, np.uint16)
    for d in docs:
        cut = len(d) // 2
        if cut:
            b.add_item(d[:cut])
        b.add_item(d[cut:] + [eos])
        b.end_document()
    b.finalize()
    good(p, vocab, eos, docs, "mg_u16_eod")  # named by prefix
    cases.append((p + ".idx", vocab, eos, os.path.join(out, "mg_u16_eod.expect"), "-"))
    cases.append((p + ".bin", vocab, eos, os.path.join(out, "mg_u16_eod.expect"), "-"))

    # Every other dtype code Megatron writes, documents without an EOD (packing inserts the separator).
    for code, vocab in [(1, 256), (2, 128), (3, 32768), (4, 100000), (5, 1000), (6, 1000), (7, 1000), (8, 65536)]:
        eos = vocab - 1
        docs = random_docs(rng, 12, vocab, eos, max_len=25)
        docs[0][0] = vocab - 2  # the largest id the documents may hold
        name = "mg_code%d" % code
        p = os.path.join(out, name)
        b = MegatronBuilder(p, DTYPES[code])
        for d in docs:
            b.add_item(d)
            b.end_document()
        b.finalize(with_modes=(code == 4))  # the optional per-sequence modes field
        good(p, vocab, eos, docs, name)

    # An empty Megatron dataset (no sequences, one document index) is valid.
    p = os.path.join(out, "mg_empty")
    b = MegatronBuilder(p, np.uint16)
    b.finalize()
    good(p, 1000, 999, [], "mg_empty")
    # Zero-length sequences and documents (an empty .bin): every document reads back empty.
    p = os.path.join(out, "mg_zero_len")
    b = MegatronBuilder(p, np.int16)
    for _ in range(3):
        b.add_item([])
        b.end_document()
    b.finalize()
    good(p, 1000, 999, [[], [], []], "mg_zero_len")

    # llm.c: gpt-2 (uint16) and llama-3 (uint32), EOT before every document.
    for model, vocab, eot in [("gpt-2", 50257, 50256), ("llama-3", 128256, 128000)]:
        docs = random_docs(rng, 20, vocab, eot, max_len=50)
        toks = []
        for d in docs:
            toks += [eot] + d
        name = "llmc_" + model.replace("-", "")
        p = os.path.join(out, name + ".bin")
        llmc_write(p, toks, model)
        good(p, vocab, eot, docs, name)
    # A file that does not start with the EOT (a shard cut mid-stream): its head is document 0.
    docs = random_docs(rng, 5, 50257, 50256)
    toks = list(docs[0])
    for d in docs[1:]:
        toks += [50256] + d
    p = os.path.join(out, "llmc_head.bin")
    llmc_write(p, toks)
    good(p, 50257, 50256, docs, "llmc_head")

    # ---- bad files
    base = os.path.join(out, "mg_code4")
    idx = open(base + ".idx", "rb").read()
    binb = open(base + ".bin", "rb").read()
    nseq = struct.unpack_from("<Q", idx, 18)[0]

    def mg_copy(name, idx_bytes, bin_bytes):
        p = os.path.join(out, name)
        open(p + ".idx", "wb").write(idx_bytes)
        open(p + ".bin", "wb").write(bin_bytes)
        return p

    bad(mg_copy("bad_trunc_header", idx[:20], binb), 100000, 99999, "truncated: 20 bytes")
    bad(mg_copy("bad_trunc_body", idx[:-30], binb), 100000, 99999, "truncated")
    bad(mg_copy("bad_magic", b"MMIDIDY" + idx[7:], binb), 100000, 99999, "bytes 0-8 are not the magic")
    bad(mg_copy("bad_version", idx[:9] + struct.pack("<Q", 2) + idx[17:], binb), 100000, 99999,
        "version 2 at offset 9")
    bad(mg_copy("bad_dtype", idx[:17] + b"\x09" + idx[18:], binb), 100000, 99999, "dtype code 9 at offset 17")
    huge = idx[:18] + struct.pack("<Q", 1 << 62) + idx[26:]
    bad(mg_copy("bad_count", huge, binb), 100000, 99999, "sequence count 4611686018427387904 (offset 18)")
    ptr_off = 34 + 4 * nseq + 8 * 2
    bad(mg_copy("bad_pointer", idx[:ptr_off] + struct.pack("<q", 3) + idx[ptr_off + 8:], binb), 100000, 99999,
        "sequence 2's pointer 3 (offset %d)" % ptr_off)
    doc_off = 34 + 12 * nseq
    last = doc_off + 8 * nseq
    bad(mg_copy("bad_docidx", idx[:last] + struct.pack("<q", nseq - 1) + idx[last + 8:], binb), 100000, 99999,
        "(entry %d, offset %d) is %d, must equal the sequence count %d" % (nseq, last, nseq - 1, nseq))
    bad(mg_copy("bad_binsize", idx, binb[:-4]), 100000, 99999,
        "= %d bytes, '%s' has %d bytes: the .idx and the .bin disagree" % (len(binb), os.path.join(out, "bad_binsize.bin"),
                                                                            len(binb) - 4))
    bad(os.path.join(out, "mg_u16_eod"), 100000, 99999, "dtype uint16 (code 8 at offset 17 of the .idx) holds ids "
        "below 65536, but the vocabulary has 100000 ids")
    bad(os.path.join(out, "mg_code1"), 300, 299, "holds ids below 256, but the vocabulary has 300 ids")
    bad(os.path.join(out, "mg_code7"), 20000000, 5, "holds ids below 16777217")
    bad(os.path.join(out, "mg_code4"), 50, 49, "not an id in [0, vocab_size 50)")
    bad(os.path.join(out, "mg_code4"), 0, 99999, "stores no vocabulary size")
    bad(os.path.join(out, "mg_code4"), 100000, -1, "needs an eos id")
    fl = open(os.path.join(out, "mg_code6.bin"), "rb").read()
    bad(mg_copy("bad_float", idx_bytes=open(os.path.join(out, "mg_code6.idx"), "rb").read(),
                bin_bytes=struct.pack("<d", 1.5) + fl[8:]), 1000, 999, "token 0 (byte offset 0) is 1.5")

    llmc = open(os.path.join(out, "llmc_gpt2.bin"), "rb").read()

    def lc_copy(name, data):
        p = os.path.join(out, name + ".bin")
        open(p, "wb").write(data)
        return p

    bad(lc_copy("bad_llmc_trunc", llmc[:-2]), 50257, 50256, "truncated")
    bad(lc_copy("bad_llmc_header", llmc[:1000]), 50257, 50256, "shorter than the 1024-byte header")
    bad(lc_copy("bad_llmc_magic", struct.pack("<i", 1234) + llmc[4:]), 50257, 50256, "magic 1234 at offset 0")
    bad(lc_copy("bad_llmc_version", llmc[:4] + struct.pack("<i", 2) + llmc[8:]), 50257, 50256,
        "version 2 at offset 4")
    bad(os.path.join(out, "llmc_gpt2.bin"), 70000, 50256, "holds ids below 65536, but the vocabulary has 70000")

    with open(os.path.join(out, "cases.tsv"), "w") as f:
        for c in cases:
            f.write("\t".join(str(x) for x in c) + "\n")


if __name__ == "__main__":
    main()
