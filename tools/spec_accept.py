#!/usr/bin/env python3
"""MTP draft acceptance of a bundle on held-out text, as a table.

usage: spec_accept.py HALO BUNDLE IDS.i32 [--backend NAME (ref, vulkan, cuda, hip)] [--prompts N]
       [--prompt-len L] [--n-predict M] [--k 1,2,3,4]

Takes N prompts of L tokens from IDS.i32 (little-endian int32 ids, e.g.
tools/train/heldout.py's), spaced evenly through it, and for each K runs
`halo run BUNDLE --tokens PROMPT --n-predict M --spec mtp --draft-n K
--draft-fixed` (greedy, exactly K drafts every round), then plain decoding of
the same prompts. Sums the `spec:` statistics halo run prints over the
prompts: acceptance per draft position, tokens per round, and tokens/s
against plain decode on the same backend (on ref a CPU figure, not the GPU's).
"""
import argparse
import array
import re
import subprocess
import sys

ROUNDS = re.compile(r"spec: (\d+) rounds, K <= \d+: (\d+) of (\d+) drafts accepted")
POS = re.compile(r"(\d+): [\d.]+% of (\d+)")
RATE = re.compile(r"generated (\d+) in ([\d.]+) s")


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("spec_accept: %s failed: %s" % (" ".join(cmd[:3]), p.stderr.strip()[-1500:]))
    return p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("halo")
    ap.add_argument("bundle")
    ap.add_argument("ids")
    ap.add_argument("--backend", default="ref")
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--prompt-len", type=int, default=64)
    ap.add_argument("--n-predict", type=int, default=64)
    ap.add_argument("--k", default="1,2,3,4")
    a = ap.parse_args()
    ids = array.array("i")
    with open(a.ids, "rb") as f:
        ids.frombytes(f.read())
    step = (len(ids) - a.prompt_len) // max(1, a.prompts)
    if step < 1:
        sys.exit("spec_accept: %s holds %d ids, too few for %d prompts of %d" % (a.ids, len(ids), a.prompts,
                                                                              a.prompt_len))
    prompts = [",".join(map(str, ids[i * step:i * step + a.prompt_len])) for i in range(a.prompts)]
    base = [a.halo, "run", a.bundle, "--backend", a.backend, "--n-predict", str(a.n_predict)]

    def rate(extra):
        n = t = 0.0
        for p in prompts:
            m = RATE.search(run(base + ["--tokens", p] + extra))
            n, t = n + int(m.group(1)), t + float(m.group(2))
        return n / t

    plain = rate([])
    print("%d held-out prompts of %d tokens, %d generated each, greedy, %s backend; plain decode %.1f t/s"
          % (a.prompts, a.prompt_len, a.n_predict, a.backend, plain))
    print("| K | accepted | by draft position | tokens per round | t/s | vs plain |")
    print("|---|---|---|---|---|---|")
    for k in [int(x) for x in a.k.split(",")]:
        rounds = acc = drafted = 0
        pos_acc, pos_n = [0] * k, [0] * k
        n = t = 0.0
        for p in prompts:
            err = run(base + ["--tokens", p, "--spec", "mtp", "--draft-n", str(k), "--draft-fixed"])
            m = ROUNDS.search(err)
            rounds, acc, drafted = rounds + int(m.group(1)), acc + int(m.group(2)), drafted + int(m.group(3))
            line = next(l for l in err.splitlines() if "acceptance by draft position" in l)
            for j, (pos, cnt) in enumerate(POS.findall(line.split("position:")[1])):
                pct = float(re.search(r"%s: ([\d.]+)%%" % pos, line).group(1))
                pos_n[j] += int(cnt)
                pos_acc[j] += round(pct * int(cnt) / 100)
            r = RATE.search(err)
            n, t = n + int(r.group(1)), t + float(r.group(2))
        by_pos = " ".join("%d: %.1f%%" % (j + 1, 100.0 * pos_acc[j] / pos_n[j]) for j in range(k) if pos_n[j])
        print("| %d | %.1f%% | %s | %.2f | %.1f | %.2fx |" % (k, 100.0 * acc / max(1, drafted), by_pos,
                                                           (acc + rounds) / max(1, rounds), n / t, n / t / plain))


if __name__ == "__main__":
    main()
