#!/usr/bin/env python3
"""Two `halo run --logits-out` files of ROWS rows each (f32, row-major): per
row the relative L2 error of TEST against REF, the worst of them, and in how
many rows the top-1 token is the same; fails (exit 1) when the worst exceeds
BOUND. The top-1 count is reported, not held: where the bound allows an
error (an int8 code rounded the other way), a random-weight model's near
tie may flip. Python's standard library only (the GPU machine's and this
one's).
usage: logits_diff.py NAME REF TEST ROWS BOUND"""
import array
import math
import sys


def load(path, rows):
    a = array.array("f")
    with open(path, "rb") as f:
        a.frombytes(f.read())
    if len(a) == 0 or len(a) % rows:
        sys.exit(f"{path}: {len(a)} floats, not {rows} rows of logits")
    n = len(a) // rows
    return [a[r * n:(r + 1) * n] for r in range(rows)]


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    name, ref_path, test_path, rows, bound = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
    ref, test = load(ref_path, rows), load(test_path, rows)
    if len(ref[0]) != len(test[0]):
        sys.exit(f"{name}: rows of {len(ref[0])} and {len(test[0])} logits")
    worst, worst_row, top1 = 0.0, 0, 0
    for r, (a, b) in enumerate(zip(ref, test)):
        num = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))
        den = math.sqrt(sum(x * x for x in a)) or 1.0
        if num / den > worst:
            worst, worst_row = num / den, r
        top1 += max(range(len(a)), key=a.__getitem__) == max(range(len(b)), key=b.__getitem__)
    ok = worst <= bound
    print(f"{'ok  ' if ok else 'FAIL'} {name}: worst row {worst_row} relative L2 {worst:.3g} (bound {bound:g}), "
          f"top-1 same in {top1}/{rows} rows")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
