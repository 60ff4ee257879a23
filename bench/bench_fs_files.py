"""File helpers the filesystem benchmarks share (bench_fs_load.py,
bench_fs_users.py): a tensor as .npy bytes, a whole file written with
one write() (as a client of a request directory does) and read."""
import io
import os

import numpy as np


def npy(a):
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


def write(path, data):
    f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.write(f, data)
    os.close(f)


def read(path):
    with open(path, "rb") as f:
        return f.read()
