#!/usr/bin/env python3
"""Quality of a quantized model against its reference, from two logits files.

usage: quant_quality.py REF.logits TEST.logits --tokens IDS [--json] [--jobs N]

REF.logits and TEST.logits are what `halo run BUNDLE --tokens IDS
--logits-out FILE` writes for the same ids: little-endian f32 [n, vocab],
row i the logits after token i. Typically REF is an f16 compile of the model
and TEST a --quant compile of the same checkpoint. IDS is the token id list
(comma-separated), a text file of ids (commas or whitespace), or a binary
little-endian int32 file (*.i32).

Row i predicts token i + 1, so n - 1 positions are scored. Printed, as
llama.cpp's perplexity tool prints them with --kl-divergence:
  - perplexity of REF and of TEST over the ids, their ratio and ln ratio;
  - KL divergence KL(REF || TEST) of the next-token distributions: mean (with
    its standard error), median, p99, max;
  - top-1 agreement: the share of positions where both argmaxes agree;
  - the RMS of p_TEST - p_REF of the actual next token (llama.cpp's RMS dp).
All arithmetic in double precision with log-sum-exp; python3's standard
library only (rows spread over --jobs processes, default every core).
"""
import argparse
import array
import json
import math
import multiprocessing
import os
import sys


def read_f32(path):
    a = array.array("f")
    with open(path, "rb") as f:
        a.frombytes(f.read())
    if sys.byteorder != "little":
        a.byteswap()
    return a


def read_tokens(arg):
    if os.path.isfile(arg):
        if arg.endswith(".i32"):
            a = array.array("i")
            with open(arg, "rb") as f:
                a.frombytes(f.read())
            if sys.byteorder != "little":
                a.byteswap()
            return list(a)
        text = open(arg).read().replace(",", " ").split()
    else:
        text = arg.split(",")
    try:
        return [int(t) for t in text if t.strip()]
    except ValueError as e:
        sys.exit("quant_quality: token ids must be integers: %s" % e)


def log_softmax(row):
    m = max(row)
    lse = m + math.log(math.fsum(math.exp(x - m) for x in row))
    return [x - lse for x in row]


# Shared with the workers (fork) or passed at start (spawn).
_state = {}


def _init(ref_path, test_path, tokens, vocab):
    _state.update(ref=read_f32(ref_path), test=read_f32(test_path), tokens=tokens, vocab=vocab)


def _score(i):
    """Position i: (kl, nll_ref, nll_test, same_top1, p_ref, p_test) for token i + 1."""
    v, ref, test = _state["vocab"], _state["ref"], _state["test"]
    lp = log_softmax(ref[i * v:(i + 1) * v])
    lq = log_softmax(test[i * v:(i + 1) * v])
    kl = math.fsum(math.exp(a) * (a - b) for a, b in zip(lp, lq))
    t = _state["tokens"][i + 1]
    top_p = max(range(v), key=lp.__getitem__)
    top_q = max(range(v), key=lq.__getitem__)
    return max(kl, 0.0), -lp[t], -lq[t], top_p == top_q, math.exp(lp[t]), math.exp(lq[t])


def percentile(sorted_values, q):
    """The q-th percentile (0..100), linear between closest ranks."""
    if not sorted_values:
        return float("nan")
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def main():
    ap = argparse.ArgumentParser(description="KL divergence, top-1 agreement and perplexity of a quantized "
                                 "model's logits against a reference's (halo run --logits-out files).")
    ap.add_argument("ref", help="reference logits (e.g. the f16 compile's)")
    ap.add_argument("test", help="logits to judge (e.g. the --quant compile's)")
    ap.add_argument("--tokens", required=True, help="the ids both runs were given: a comma list, a text file, "
                    "or a little-endian int32 file (*.i32)")
    ap.add_argument("--json", action="store_true", help="print the numbers as one JSON object")
    ap.add_argument("--jobs", type=int, default=0, help="worker processes (default: every core)")
    a = ap.parse_args()

    tokens = read_tokens(a.tokens)
    n = len(tokens)
    sizes = [os.path.getsize(p) for p in (a.ref, a.test)]
    if n < 2:
        sys.exit("quant_quality: need at least 2 token ids, got %d" % n)
    if sizes[0] != sizes[1]:
        sys.exit("quant_quality: %s has %d bytes, %s %d: not the same run" % (a.ref, sizes[0], a.test, sizes[1]))
    if sizes[0] % (4 * n):
        sys.exit("quant_quality: %s holds %d bytes, not n * vocab floats for n = %d ids" % (a.ref, sizes[0], n))
    vocab = sizes[0] // (4 * n)
    bad = [t for t in tokens if not 0 <= t < vocab]
    if bad:
        sys.exit("quant_quality: token id %d is outside the vocab of %d" % (bad[0], vocab))

    positions = range(n - 1)
    jobs = a.jobs or os.cpu_count() or 1
    if jobs > 1 and n > 64:
        with multiprocessing.Pool(jobs, _init, (a.ref, a.test, tokens, vocab)) as pool:
            rows = pool.map(_score, positions, chunksize=max(1, (n - 1) // (4 * jobs)))
    else:
        _init(a.ref, a.test, tokens, vocab)
        rows = [_score(i) for i in positions]

    m = len(rows)
    kls = sorted(r[0] for r in rows)
    kl_mean = math.fsum(kls) / m
    kl_sd = math.sqrt(math.fsum((k - kl_mean) ** 2 for k in kls) / (m - 1)) if m > 1 else 0.0
    nll_ref = math.fsum(r[1] for r in rows) / m
    nll_test = math.fsum(r[2] for r in rows) / m
    same = sum(1 for r in rows if r[3]) / m
    rms_dp = math.sqrt(math.fsum((r[5] - r[4]) ** 2 for r in rows) / m)
    out = {
        "positions": m,
        "vocab": vocab,
        "ppl_ref": math.exp(nll_ref),
        "ppl_test": math.exp(nll_test),
        "ppl_ratio": math.exp(nll_test - nll_ref),
        "ln_ppl_ratio": nll_test - nll_ref,
        "kl_mean": kl_mean,
        "kl_mean_stderr": kl_sd / math.sqrt(m),
        "kl_median": percentile(kls, 50),
        "kl_p99": percentile(kls, 99),
        "kl_max": kls[-1],
        "top1_agreement": same,
        "top1_agreement_stderr": math.sqrt(same * (1 - same) / m),
        "rms_dp": rms_dp,
    }
    if a.json:
        print(json.dumps(out, indent=1))
        return
    print("positions scored      %d (vocab %d)" % (m, vocab))
    print("perplexity  ref       %.4f" % out["ppl_ref"])
    print("perplexity  test      %.4f" % out["ppl_test"])
    print("ppl ratio test/ref    %.6f   ln ratio %+.6f" % (out["ppl_ratio"], out["ln_ppl_ratio"]))
    print("KL divergence mean    %.6f +/- %.6f" % (kl_mean, out["kl_mean_stderr"]))
    print("KL divergence median  %.6f" % out["kl_median"])
    print("KL divergence p99     %.6f" % out["kl_p99"])
    print("KL divergence max     %.6f" % out["kl_max"])
    print("top-1 agreement       %.3f%% +/- %.3f%%" % (100 * same, 100 * out["top1_agreement_stderr"]))
    print("RMS dp (next token)   %.4f%%" % (100 * rms_dp))


if __name__ == "__main__":
    main()
