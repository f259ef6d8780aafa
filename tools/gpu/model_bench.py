"""llama-bench-style table for one halo bundle on the GPU machine.

Runs `halo bench` (prompt test ppN: N prompt tokens from an empty context;
generation test tgN: N decode steps; each once untimed, then REPS times in
the same process) and reports tokens/s (mean ± sd) beside the read ceiling
measured by bench/read_bw in the same call: the fraction of the ceiling is
(weight bytes read per decoded token / time per token) / ceiling.

usage: model_bench.py HALO BUNDLE MODEL ACTIVE_BYTES CEILING_GBS OUT_JSON
       [--pp 512] [--tg 128] [--reps 3] [--dtype f16] [--backend vulkan] [--tuning DB | --no-tuning]
"""
import argparse
import json
import subprocess
import sys


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
    ap.add_argument("--backend", default="vulkan", help="halo bench's backend: vulkan, cuda, hip")
    ap.add_argument("--tuning", default=None)
    ap.add_argument("--no-tuning", action="store_true")
    a = ap.parse_args()
    extra = ["--tuning", a.tuning] if a.tuning else ["--no-tuning"] if a.no_tuning else []
    cmd = [a.halo, "bench", a.bundle, "-p", str(a.pp), "-n", str(a.tg), "-r", str(a.reps), "-o", "json",
           "--backend", a.backend] + extra
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"model_bench: {' '.join(cmd[:3])} failed: {p.stderr.strip()[-2000:]}")
    rows = []
    for r in json.loads(p.stdout):
        row = {"model": a.model, "dtype": a.dtype, "backend": r["backend"], "test": r["test"],
               "t/s": round(r["avg_ts"], 2), "sd": round(r["stddev_ts"], 2),
               "runs": [round(t, 2) for t in r["samples_ts"]]}
        if r["test"].startswith("tg"):
            gbs = a.active_bytes * r["avg_ts"] / 1e9
            row["weight_GB/s"] = round(gbs, 1)
            row["ceiling_GB/s"] = a.ceiling_gbs
            row["ceiling_fraction"] = round(gbs / a.ceiling_gbs, 4)
        rows.append(row)
    print(f"| model | dtype | backend | test | t/s | weight GB/s | of read ceiling ({a.ceiling_gbs:.0f} GB/s) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        frac = f"{100 * r['ceiling_fraction']:.1f}%" if "ceiling_fraction" in r else "-"
        print(f"| {r['model']} | {r['dtype']} | {r['backend']} | {r['test']} | {r['t/s']:.1f} ± {r['sd']:.1f} | "
              f"{r.get('weight_GB/s', '-')} | {frac} |")
    with open(a.out_json, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
