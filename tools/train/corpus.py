"""The training corpus: the Python standard library's own sources on the machine.

Selection (deterministic for a given Python install):
- every `*.py` file under sysconfig.get_paths()["stdlib"], walked in sorted
  order of relative path, skipping site-packages/, dist-packages/ and
  __pycache__/ folders;
- test/ (CPython's regression tests) is kept where it is installed: it is
  real, idiomatic Python and about doubles the data (17 of 31 MB on a full
  CPython 3.11), which matters for models trained for many epochs; Debian and
  Ubuntu strip it to a few files (libpython3.X-testsuite is separate), and the
  recorded file counts and sizes say what was there;
- files that are not valid UTF-8 are skipped (a few test inputs are Latin-1 or
  deliberately broken) and counted;
- generated data is skipped and counted: files over MAX_FILE_BYTES (in
  CPython that is pydoc_data/topics.py, ~0.8 MB of documentation that Sphinx
  writes as one dict of strings) and the charmap codec tables of encodings/
  that gencodec.py writes (some 65 near-identical 256-entry tables, ~1.2 MB):
  they teach little, and whichever held-out split they fall into is dominated
  by them (a first run's validation split, full of codec tables, scored 0.8
  nats/token where the test split, mostly topics.py prose, scored 3.8).

Splits by file, from the sha256 of the relative path (UTF-8, '/' separators):
files taken in the order of their digests go to the test split until it holds
TEST_FRAC of all bytes, then to the validation split until it holds
VALID_FRAC, the rest to training. A fixed fraction of files ("1 in 20") gave
too few bytes on a small install (19 files, 2% of the bytes, on Ubuntu's
Python 3.12), so the split is sized by bytes: the test split is what the
reported held-out numbers use; the validation split only draws the loss
curve and picks the best checkpoint, so the test numbers stay unbiased.
"""

import hashlib
import os
import sys
import sysconfig

TEST_FRAC = 0.10
VALID_FRAC = 0.03
MAX_FILE_BYTES = 512 * 1024
GENERATED_MARKERS = ("gencodec.py",)  # looked for in a file's first 1000 characters
SKIP_DIRS = {"site-packages", "dist-packages", "__pycache__"}


def stdlib_root():
    return sysconfig.get_paths()["stdlib"]


def path_digest(rel):
    return hashlib.sha256(rel.encode("utf-8")).hexdigest()


def list_files(root):
    """Relative paths of the candidate .py files, sorted."""
    rels = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in filenames:
            if name.endswith(".py"):
                rel = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
                rels.append(rel)
    return sorted(rels)


def load_corpus(root=None):
    """{'train' | 'valid' | 'test': [(rel, text)] sorted by path, 'stats': {...}}."""
    root = root or stdlib_root()
    files = []
    skipped_utf8, skipped_big, skipped_gen = [], [], []
    for rel in list_files(root):
        path = os.path.join(root, rel)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            skipped_utf8.append(rel)
            continue
        if len(data) > MAX_FILE_BYTES:
            skipped_big.append(rel)
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            skipped_utf8.append(rel)
            continue
        if any(m in text[:1000] for m in GENERATED_MARKERS):
            skipped_gen.append(rel)
            continue
        files.append((rel, text, len(data)))
    total = sum(n for _, _, n in files)
    split_of, filled = {}, {"test": 0, "valid": 0, "train": 0}
    for rel, _, n in sorted(files, key=lambda f: path_digest(f[0])):
        if filled["test"] < TEST_FRAC * total:
            split = "test"
        elif filled["valid"] < VALID_FRAC * total:
            split = "valid"
        else:
            split = "train"
        split_of[rel] = split
        filled[split] += n
    parts = {"train": [], "valid": [], "test": []}
    for rel, text, _ in files:
        parts[split_of[rel]].append((rel, text))
    train, valid, test = parts["train"], parts["valid"], parts["test"]
    n_bytes = filled
    in_test_dir = [n for rel, _, n in files if rel.startswith("test/")]
    stats = {
        "python_version": sys.version.split()[0],
        "python_implementation": sys.implementation.name,
        "stdlib_root": root,
        "files_train": len(train),
        "files_valid": len(valid),
        "files_test": len(test),
        "bytes_train": n_bytes["train"],
        "bytes_valid": n_bytes["valid"],
        "bytes_test": n_bytes["test"],
        "skipped_not_utf8": len(skipped_utf8),
        "skipped_not_utf8_files": skipped_utf8,
        "skipped_over_max_bytes": len(skipped_big),
        "skipped_over_max_bytes_files": skipped_big,
        "max_file_bytes": MAX_FILE_BYTES,
        "skipped_generated": len(skipped_gen),
        "skipped_generated_files": skipped_gen,
        "generated_markers": list(GENERATED_MARKERS),
        "test_package_files": len(in_test_dir),
        "test_package_bytes": sum(in_test_dir),
        "split_rule": f"files in sha256(relative path) order: test until {TEST_FRAC:.1%} of the bytes, then "
                      f"validation until {VALID_FRAC:.1%}, the rest train",
        "selection_rule": "*.py under sysconfig stdlib, sorted by relative path, without site-packages/, "
                          "dist-packages/, __pycache__/; UTF-8 only; at most 512 KiB per file; without the "
                          "codec tables generated by gencodec.py",
        "license": "PSF-2.0 (Python Software Foundation License Version 2)",
    }
    # a digest of the selection, so two runs can be compared at a glance
    h = hashlib.sha256()
    for rel, text in sorted(train + valid + test):
        h.update(rel.encode("utf-8") + b"\0" + hashlib.sha256(text.encode("utf-8")).digest())
    stats["selection_sha256"] = h.hexdigest()
    return {"train": train, "valid": valid, "test": test, "stats": stats}
