#!/usr/bin/python3
"""qdq_accuracy.py - modelfs against ONNX Runtime on one model: the same
input (ort_bench.js's sin(i), batch --batch), modelfs through `modelfs run`,
ONNX Runtime through bench/qdq_calib.js; prints one JSON line with the
largest absolute difference of each output, that difference in units of
the output's spread (max - min of ONNX Runtime's output), and whether the
top-1 class of every row agrees.

    qdq_accuracy.py MODEL.onnx [--batch N] [--modelfs ./modelfs]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_qdq_models import input_specs  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('model')
    ap.add_argument('--batch', type=int, default=1)
    ap.add_argument('--modelfs', default=os.path.join(HERE, '..', 'modelfs'))
    a = ap.parse_args()
    m = onnx.load(a.model)
    inits = {t.name for t in m.graph.initializer}
    specs = input_specs(m.graph, inits, a.batch)
    ref = json.loads(subprocess.run(['node', os.path.join(HERE, 'qdq_calib.js'), a.model,
                                     json.dumps(specs), '0'], check=True, capture_output=True,
                                    text=True).stdout)
    tmp = tempfile.mkdtemp(prefix='qdq-acc-')
    try:
        os.makedirs(os.path.join(tmp, 'repo', 'm', '1'))
        shutil.copy(a.model, os.path.join(tmp, 'repo', 'm', '1', 'model.onnx'))
        with open(os.path.join(tmp, 'repo', 'm', 'config.pbtxt'), 'w') as f:
            f.write('max_batch_size: 0\n')   # the batch as the input gives it
        args = []
        for s in specs:
            n = int(np.prod(s['shape']))
            if s['dtype'] == 'int64':
                v = (np.arange(n) % 100).astype(np.int64)   # run 0 of qdq_calib.js
            else:
                v = np.sin(np.arange(n, dtype=np.float64)).astype(np.float32)
            p = os.path.join(tmp, s['name'].replace('/', '_') + '.npy')
            np.save(p, v.reshape(s['shape']))
            args.append('%s=%s' % (s['name'], p))
        subprocess.run([a.modelfs, 'run', '--device=cpu', '--out=' + os.path.join(tmp, 'out'),
                        os.path.join(tmp, 'repo', 'm')] + args, check=True, capture_output=False)
        res = {}
        for name, want in ref.items():
            got = np.load(os.path.join(tmp, 'out', name.replace('/', '_') + '.npy')).astype(np.float64)
            want = np.array(want, np.float64).reshape(got.shape)
            diff = float(np.abs(got - want).max())
            spread = float(want.max() - want.min()) or 1.0
            top1 = bool((got.reshape(got.shape[0], -1).argmax(1) ==
                         want.reshape(want.shape[0], -1).argmax(1)).all())
            res[name] = {'max_abs': diff, 'rel_spread': diff / spread, 'top1_agree': top1}
        print(json.dumps(res))
    finally:
        shutil.rmtree(tmp)


if __name__ == '__main__':
    main()
