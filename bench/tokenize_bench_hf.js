#!/usr/bin/env node
// bench/tokenize_bench.c's measurement with Hugging Face tokenizers (the npm
// binding of the Rust library), one thread:
//   RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false NODE_PATH=/tmp/tokoracle/node_modules \
//     node bench/tokenize_bench_hf.js TOKENIZER.json TEXT_FILE [REPEATS]
'use strict';
const fs = require('fs');
const { Tokenizer } = require('tokenizers');

async function main() {
  const [tokPath, textPath, repsArg] = process.argv.slice(2);
  const reps = Number(repsArg || 5);
  const text = fs.readFileSync(textPath, 'utf8');
  const bytes = Buffer.byteLength(text, 'utf8');
  const now = () => Number(process.hrtime.bigint()) / 1e9;
  const t0 = now();
  const tok = Tokenizer.fromFile(tokPath);
  const t1 = now();
  let ids = (await tok.encode(text)).getIds();
  const t2 = now();
  for (let r = 0; r < reps; r++) ids = (await tok.encode(text)).getIds();
  const t3 = now();
  await tok.decode(ids, false);
  const t4 = now();
  const line = (what, s, n) =>
    console.log(`${what.padEnd(7)} ${((s * 1e3) / n).toFixed(1).padStart(8)} ms  ${((bytes * n) / s / 1e6).toFixed(2).padStart(7)} MB/s  ${((ids.length * n) / s).toFixed(0).padStart(9)} tokens/s`);
  console.log(`${textPath}: ${bytes} bytes, ${ids.length} tokens; load ${((t1 - t0) * 1e3).toFixed(0)} ms`);
  line('cold', t2 - t1, 1);
  line('warm', t3 - t2, reps);
  line('decode', t4 - t3, 1);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
