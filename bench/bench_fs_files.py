"""File helpers the filesystem benchmarks share (bench_fs_load.py,
bench_fs_users.py, ab_clients.py): a tensor as .npy bytes, a whole file
written with one write() (as a client of a request directory does) and
read, and the requests per second of several client processes."""
import io
import multiprocessing as mp
import os
import time

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


def pool_rate(client, head, clients, n):
    """Requests per second of `clients` processes, each calling
    client(head + (count, k)) (which returns count) with count n, after
    a warm-up of 2 each."""
    with mp.Pool(clients) as p:
        p.map(client, [head + (2, k) for k in range(clients)])
        t = time.perf_counter()
        done = sum(p.map(client, [head + (n, k) for k in range(clients)]))
        return done / (time.perf_counter() - t)
