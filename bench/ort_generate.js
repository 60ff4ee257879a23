// ort_generate.js - greedy text generation with ONNX Runtime (CPU), the
// peer of bench/bench_generate.c and of the daemon's generate file: the
// loop an obvious client writes around a decoder exported with its
// key/value cache (Hugging Face / Optimum names), feeding each step's
// present.N.key|value back as past_key_values.N.key|value.  Usage:
//   node ort_generate.js MODEL.onnx PROMPT NEW STREAMS THREADS [MODE] [ROUNDS]
// MODE (with STREAMS > 1):
//   concurrent  STREAMS generation loops at once on one session (what a
//               Node client serving STREAMS users writes; onnxruntime-node
//               runs one session.run at a time on the main thread, each on
//               THREADS intra-op threads, so the steps interleave)
//   batched     one loop over a batch of STREAMS rows (the streams kept in
//               step: same prompt length, same number of new tokens)
// Prompt ids of stream b: (7 j + 13 b) % 1000, as bench_generate's.
// After a warm-up generation of 2 tokens, prints one JSON line, the best of ROUNDS (default 1): {"ttft_ms" (mean
// over streams, from the start), "total_ms", "tokens_per_s" (all streams'
// new tokens over total_ms), "step_ms" (median decode step of stream 0),
// "cpu_ms_per_token" (the process's CPU time over the rounds' tokens), "ids"
// (stream 0's)}.
const ort = require('onnxruntime-node');

function now() { return Number(process.hrtime.bigint()) / 1e6; }

function feeds(session, rows, tokens, seq, past, cache) {
  const f = {};
  const ids = new BigInt64Array(rows * seq);
  for (let i = 0; i < rows * seq; i++) ids[i] = BigInt(tokens[i]);
  f.input_ids = new ort.Tensor('int64', ids, [rows, seq]);
  f.attention_mask = new ort.Tensor('int64', new BigInt64Array(rows * (past + seq)).fill(1n), [rows, past + seq]);
  if (session.inputNames.includes('position_ids')) {
    const pos = new BigInt64Array(rows * seq);
    for (let b = 0; b < rows; b++) for (let j = 0; j < seq; j++) pos[b * seq + j] = BigInt(past + j);
    f.position_ids = new ort.Tensor('int64', pos, [rows, seq]);
  }
  for (const n of session.inputNames)
    if (n.startsWith('past_key_values.')) f[n] = cache[n];
  return f;
}

// One loop of `rows` rows starting at stream index first; resolves with
// its timings and row 0's ids.
async function generate(session, rows, first, prompt, n_new, t0) {
  const cache = {};
  session.inputMetadata.forEach((m) => {   // [batch, heads, past, head size]
    if (m.name.startsWith('past_key_values.'))
      cache[m.name] = new ort.Tensor('float32', new Float32Array(0), [rows, m.shape[1], 0, m.shape[3]]);
  });
  let tokens = [];
  for (let b = 0; b < rows; b++)
    for (let j = 0; j < prompt; j++) tokens.push((7 * j + 13 * (first + b)) % 1000);
  let seq = prompt, past = 0, ttft = 0;
  const ids = [], steps = [];
  for (let step = 0; step < n_new; step++) {
    const s0 = now();
    const out = await session.run(feeds(session, rows, tokens, seq, past, cache));
    const logits = out.logits.data, vocab = out.logits.dims[2];
    const next = [];
    for (let b = 0; b < rows; b++) {
      const base = (b * seq + seq - 1) * vocab;
      let best = 0;
      for (let v = 1; v < vocab; v++) if (logits[base + v] > logits[base + best]) best = v;
      next.push(best);
    }
    ids.push(next[0]);
    for (const n of Object.keys(out))
      if (n.startsWith('present.')) cache['past_key_values.' + n.slice(8)] = out[n];
    past += seq;
    seq = 1;
    tokens = next;
    if (step === 0) ttft = now() - t0;
    else steps.push(now() - s0);
  }
  steps.sort((a, b) => a - b);
  return { ttft, ids, step: steps[Math.floor(steps.length / 2)] };
}

async function main() {
  const [path, promptArg, newArg, streamsArg, threadsArg, modeArg, roundsArg] = process.argv.slice(2);
  const prompt = parseInt(promptArg || '128', 10), n_new = parseInt(newArg || '128', 10);
  const streams = parseInt(streamsArg || '1', 10), threads = parseInt(threadsArg || '2', 10);
  const mode = modeArg || 'concurrent', rounds = parseInt(roundsArg || '1', 10);
  const session = await ort.InferenceSession.create(path, {
    intraOpNumThreads: threads, interOpNumThreads: 1,
    graphOptimizationLevel: 'all', executionMode: 'sequential',
  });
  await generate(session, streams > 1 && mode !== 'concurrent' ? streams : 1, 0, prompt, 2, now());   // warm-up
  let best = null;
  const c0 = process.cpuUsage();
  for (let r = 0; r < rounds; r++) {
    const t0 = now();
    let res;
    if (streams > 1 && mode === 'concurrent') {
      const loops = [];
      for (let s = 0; s < streams; s++) loops.push(generate(session, 1, s, prompt, n_new, t0));
      res = await Promise.all(loops);
    } else {
      res = [await generate(session, streams, 0, prompt, n_new, t0)];
    }
    const total = now() - t0;
    const ttft = res.reduce((a, x) => a + x.ttft, 0) / res.length;
    if (!best || total < best.total) best = { total, ttft, step: res[0].step, ids: res[0].ids };
  }
  const c = process.cpuUsage(c0), cpu = (c.user + c.system) / 1e3 / rounds;
  console.log(JSON.stringify({
    ttft_ms: +best.ttft.toFixed(2), total_ms: +best.total.toFixed(2),
    tokens_per_s: +(streams * n_new * 1e3 / best.total).toFixed(2), step_ms: +best.step.toFixed(3),
    cpu_ms_per_token: +(cpu / (streams * n_new)).toFixed(2), ids: best.ids,
  }));
}
main().catch((e) => { console.error('ort_generate: ' + e.message); process.exit(1); });
