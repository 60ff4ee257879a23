// ort_bench.js - time one model with ONNX Runtime (CPU), the peer modelfs
// is measured against.  Usage:
//   node ort_bench.js MODEL.onnx INPUTS_JSON ITERS THREADS
// INPUTS_JSON: [{"name":..., "dtype":"float32"|"int64"|..., "shape":[...]}]
// (printed by `bench_engine --describe`).  Prints one JSON line:
// {"median_ms": ..., "min_ms": ...}.
const ort = require('onnxruntime-node');

const typed = {
  float32: Float32Array, float64: Float64Array, int64: BigInt64Array,
  int32: Int32Array, int8: Int8Array, uint8: Uint8Array, bool: Uint8Array,
};

async function main() {
  const [path, inputsJson, itersArg, threadsArg] = process.argv.slice(2);
  const iters = parseInt(itersArg || '20', 10);
  const threads = parseInt(threadsArg || '2', 10);
  const session = await ort.InferenceSession.create(path, {
    intraOpNumThreads: threads, interOpNumThreads: 1,
    graphOptimizationLevel: 'all', executionMode: 'sequential',
  });
  const feeds = {};
  for (const spec of JSON.parse(inputsJson)) {
    const n = spec.shape.reduce((a, b) => a * b, 1);
    const Arr = typed[spec.dtype];
    const data = new Arr(n);
    for (let i = 0; i < n; i++)
      data[i] = Arr === BigInt64Array ? BigInt(i % 7) : (Arr === Float32Array || Arr === Float64Array) ? Math.sin(i) : i % 7;
    feeds[spec.name] = new ort.Tensor(spec.dtype, data, spec.shape);
  }
  for (let i = 0; i < 3; i++) await session.run(feeds);
  const times = [];
  for (let i = 0; i < iters; i++) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  console.log(JSON.stringify({ median_ms: times[Math.floor(times.length / 2)], min_ms: times[0] }));
}
main().catch((e) => { console.error('ort_bench: ' + e.message); process.exit(1); });
