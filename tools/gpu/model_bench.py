"""llama-bench-style table for one halo bundle on the GPU machine.

Runs `halo run` for the prompt test (ppN: N prompt tokens, one generated)
and the generation test (tgN: 16 prompt tokens, N generated), each REPS
times after one discarded warm-up run, and reports tokens/s (median) beside the read ceiling measured by
bench/read_bw in the same call: the fraction of the ceiling is
(weight bytes read per decoded token / time per token) / ceiling.

usage: model_bench.py HALO BUNDLE MODEL ACTIVE_BYTES CEILING_GBS OUT_JSON
       [--pp 512] [--tg 128] [--reps 3] [--dtype f16] [--tuning DB | --no-tuning]
"""
import argparse
import json
import re
import statistics
import subprocess
import sys

LINE = re.compile(r"prompt (\d+) tokens in ([\d.]+) s \(([\d.]+) t/s\), generated (\d+) in ([\d.]+) s \(([\d.]+) t/s\)")


def run(halo, bundle, n_prompt, n_predict, extra):
    tokens = ",".join(str(1 + i % 1000) for i in range(n_prompt))
    cmd = [halo, "run", bundle, "--backend", "vulkan", "--tokens", tokens, "--n-predict", str(n_predict)] + extra
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"model_bench: {' '.join(cmd[:3])} failed: {p.stderr.strip()[-2000:]}")
    m = LINE.search(p.stderr)
    if not m:
        sys.exit(f"model_bench: no timing line in halo run's output: {p.stderr[-2000:]}")
    return float(m.group(3)), float(m.group(6))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("halo")
    ap.add_argument("bundle")
    ap.add_argument("model")
    ap.add_argument("active_bytes", type=float)
    ap.add_argument("ceiling_gbs", type=float)
    ap.add_argument("out_json")
    ap.add_argument("--pp", type=int, default=512)
    ap.add_argument("--tg", type=int, default=128)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--dtype", default="f16", help="the weights' format, for the table")
    ap.add_argument("--tuning", default=None)
    ap.add_argument("--no-tuning", action="store_true")
    a = ap.parse_args()
    extra = ["--tuning", a.tuning] if a.tuning else ["--no-tuning"] if a.no_tuning else []
    # One discarded run of each test first: on the H200 the first run after a
    # compile or a pause decoded at 76 t/s against 134 t/s for the next.
    run(a.halo, a.bundle, a.pp, 1, extra)
    pp = [run(a.halo, a.bundle, a.pp, 1, extra)[0] for _ in range(a.reps)]
    run(a.halo, a.bundle, 16, a.tg, extra)
    tg = [run(a.halo, a.bundle, 16, a.tg, extra)[1] for _ in range(a.reps)]
    rows = []
    for test, ts in ((f"pp{a.pp}", pp), (f"tg{a.tg}", tg)):
        med = statistics.median(ts)
        row = {"model": a.model, "dtype": a.dtype, "backend": "vulkan", "test": test, "t/s": round(med, 2),
               "runs": [round(t, 2) for t in ts]}
        if test.startswith("tg"):
            gbs = a.active_bytes * med / 1e9
            row["weight_GB/s"] = round(gbs, 1)
            row["ceiling_GB/s"] = a.ceiling_gbs
            row["ceiling_fraction"] = round(gbs / a.ceiling_gbs, 4)
        rows.append(row)
    print(f"| model | dtype | backend | test | t/s | weight GB/s | of read ceiling ({a.ceiling_gbs:.0f} GB/s) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        frac = f"{100 * r['ceiling_fraction']:.1f}%" if "ceiling_fraction" in r else "-"
        print(f"| {r['model']} | {r['dtype']} | vulkan | {r['test']} | {r['t/s']:.1f} | {r.get('weight_GB/s', '-')} | {frac} |")
    with open(a.out_json, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
