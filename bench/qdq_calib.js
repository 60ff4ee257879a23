// qdq_calib.js - the calibration step of make_qdq_models.py: run a model
// whose every float value is a graph output through ONNX Runtime on a few
// generated inputs and print {"value": [min, max], ...} over all runs (the
// MinMax calibration ONNX Runtime's quantize_static does by default).
// Usage: node qdq_calib.js MODEL.onnx INPUTS_JSON RUNS
// INPUTS_JSON as ort_bench.js takes it (bench_engine --describe).
// With RUNS = 0 it instead runs the model once on run 0's inputs and
// prints {"output name": [values...]} (the accuracy reference).
const ort = require('onnxruntime-node');

const typed = {
  float32: Float32Array, int64: BigInt64Array, int32: Int32Array,
  int8: Int8Array, uint8: Uint8Array,
};

// Input r of the calibration set: smooth float values in about [-2, 2]
// (run 0 is exactly ort_bench.js's sin(i)), token ids below 100.
function feedsFor(specs, r) {
  const feeds = {};
  for (const spec of specs) {
    const n = spec.shape.reduce((a, b) => a * b, 1);
    const Arr = typed[spec.dtype];
    const data = new Arr(n);
    for (let i = 0; i < n; i++) {
      if (Arr === BigInt64Array) data[i] = BigInt((i * (r + 1) + r * 13) % 100);
      else if (Arr === Float32Array) data[i] = r === 0 ? Math.sin(i) : (1 + r / 2) * Math.sin(i * (1 + r * 0.37) + r);
      else data[i] = (i + r) % 7;
    }
    feeds[spec.name] = new ort.Tensor(spec.dtype, data, spec.shape);
  }
  return feeds;
}

async function main() {
  const [path, inputsJson, runsArg] = process.argv.slice(2);
  const runs = parseInt(runsArg || '4', 10);
  const specs = JSON.parse(inputsJson);
  const session = await ort.InferenceSession.create(path, {
    intraOpNumThreads: 2, graphOptimizationLevel: runs === 0 ? 'all' : 'disabled',
  });
  if (runs === 0) {
    const out = await session.run(feedsFor(specs, 0));
    const res = {};
    for (const k of session.outputNames) res[k] = Array.from(out[k].data, Number);
    console.log(JSON.stringify(res));
    return;
  }
  const range = {};
  for (let r = 0; r < runs; r++) {
    const out = await session.run(feedsFor(specs, r));
    for (const k of session.outputNames) {
      if (out[k].type !== 'float32') continue;
      let lo = Infinity, hi = -Infinity;
      for (const v of out[k].data) { if (v < lo) lo = v; if (v > hi) hi = v; }
      const o = range[k];
      range[k] = o ? [Math.min(o[0], lo), Math.max(o[1], hi)] : [lo, hi];
    }
  }
  console.log(JSON.stringify(range));
}
main().catch((e) => { console.error('qdq_calib: ' + e.message); process.exit(1); });
