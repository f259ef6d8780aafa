"""The training corpus: the Python standard library's own sources on the machine.

Selection (deterministic for a given Python install):
- every `*.py` file under sysconfig.get_paths()["stdlib"], walked in sorted
  order of relative path, skipping site-packages/, dist-packages/ and
  __pycache__/ folders;
- test/ (CPython's regression tests) is kept: it is real, idiomatic Python and
  about doubles the data (some 17 MB of 31 MB on CPython 3.11), which matters
  for models trained for several epochs; distributions that strip it (Debian's
  python3.X without libpython3.X-testsuite) simply have a smaller corpus, which
  the recorded file count and byte size show;
- files that are not valid UTF-8 are skipped (a few test inputs are Latin-1 or
  deliberately broken on purpose) and counted;
- files over MAX_FILE_BYTES are skipped (generated tables, not prose or code
  anyone writes) and counted.

Held-out split by file: sha256 of the relative path (UTF-8, '/' separators);
a file is held out when the first 8 bytes of its digest, read as a big-endian
integer, are 0 mod TEST_MOD (1 file in 20 on average).
"""

import hashlib
import os
import sys
import sysconfig

TEST_MOD = 20
MAX_FILE_BYTES = 1 << 20
SKIP_DIRS = {"site-packages", "dist-packages", "__pycache__"}


def stdlib_root():
    return sysconfig.get_paths()["stdlib"]


def is_test_file(rel):
    digest = hashlib.sha256(rel.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % TEST_MOD == 0


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
    """{'train': [(rel, text)], 'test': [(rel, text)], 'stats': {...}}."""
    root = root or stdlib_root()
    train, test = [], []
    skipped_utf8, skipped_big = [], []
    n_bytes = {"train": 0, "test": 0}
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
        split = "test" if is_test_file(rel) else "train"
        (test if split == "test" else train).append((rel, text))
        n_bytes[split] += len(data)
    has_test_dir = any(rel.startswith("test/") for rel, _ in train + test)
    stats = {
        "python_version": sys.version.split()[0],
        "python_implementation": sys.implementation.name,
        "stdlib_root": root,
        "files_train": len(train),
        "files_test": len(test),
        "bytes_train": n_bytes["train"],
        "bytes_test": n_bytes["test"],
        "skipped_not_utf8": len(skipped_utf8),
        "skipped_not_utf8_files": skipped_utf8,
        "skipped_over_max_bytes": len(skipped_big),
        "skipped_over_max_bytes_files": skipped_big,
        "max_file_bytes": MAX_FILE_BYTES,
        "includes_test_package": has_test_dir,
        "split_rule": f"held out when int.from_bytes(sha256(relpath)[:8], 'big') % {TEST_MOD} == 0",
        "selection_rule": "*.py under sysconfig stdlib, sorted by relative path, without site-packages/, "
                          "dist-packages/, __pycache__/; UTF-8 only; at most 1 MiB per file",
        "license": "PSF-2.0 (Python Software Foundation License Version 2)",
    }
    # a digest of the selection, so two runs can be compared at a glance
    h = hashlib.sha256()
    for rel, text in train + test:
        h.update(rel.encode("utf-8") + b"\0" + hashlib.sha256(text.encode("utf-8")).digest())
    stats["selection_sha256"] = h.hexdigest()
    return {"train": train, "test": test, "stats": stats}
