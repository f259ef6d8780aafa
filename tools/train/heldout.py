"""Writes held-out text and its token ids for measurements on a trained model
(quantization quality, MTP acceptance): the test split of corpus.py, files in
path order joined by blank lines, the first N tokens of it.

usage: heldout.py TOKENIZER_JSON OUT_PREFIX [N]
writes OUT_PREFIX.txt (the text those tokens cover, UTF-8) and OUT_PREFIX.i32
(little-endian int32 ids). Needs the HF `tokenizers` module; the selection is
corpus.py's, so it must run where the model was trained (the same stdlib).
"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus  # noqa: E402


def main():
    from tokenizers import Tokenizer

    tok_path, prefix = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 8192
    tok = Tokenizer.from_file(tok_path)
    text = "\n\n".join(t for _, t in corpus.load_corpus()["test"])
    # tokenize a prefix comfortably longer than n tokens, then cut at a token
    # boundary, so the text file and the ids describe the same thing
    enc = tok.encode(text[: 16 * n], add_special_tokens=False)
    ids = enc.ids[:n]
    end = enc.offsets[len(ids) - 1][1]
    with open(prefix + ".txt", "w", encoding="utf-8") as f:
        f.write(text[:end])
    with open(prefix + ".i32", "wb") as f:
        f.write(struct.pack("<%di" % len(ids), *ids))
    print(f"heldout: {len(ids)} tokens, {end} characters of the test split -> {prefix}.txt/.i32")


if __name__ == "__main__":
    main()
