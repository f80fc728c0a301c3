"""Shared by the TensorFlow examples: scikit-learn's bundled digits (read
from the package's own data file; nothing is downloaded), a fixed train/test
split, and a flushed print for task logs. The examples import it from their
own directory, which Python puts on sys.path."""
import os


def log(*a):
    print(*a, flush=True)


def load_digits_xy():
    """(x float32 [1797, 64] scaled to [0, 1], y int64) from scikit-learn's
    bundled digits data."""
    import gzip
    import importlib.util
    import numpy as np
    spec = importlib.util.find_spec("sklearn")  # locates, does not import
    path = None
    if spec and spec.submodule_search_locations:
        for d in spec.submodule_search_locations:
            p = os.path.join(d, "datasets", "data", "digits.csv.gz")
            if os.path.exists(p):
                path = p
                break
    if path:
        with gzip.open(path, "rt") as f:
            data = np.loadtxt(f, delimiter=",", dtype=np.float32)
        x, y = data[:, :-1], data[:, -1].astype(np.int64)
    else:
        from sklearn.datasets import load_digits
        x, y = load_digits(return_X_y=True)
        x, y = x.astype(np.float32), y.astype(np.int64)
    return x / 16.0, y


def split(x, y, test_fraction=0.2, seed=0):
    import numpy as np
    idx = np.random.RandomState(seed).permutation(len(x))
    n_test = int(len(x) * test_fraction)
    te, tr = idx[:n_test], idx[n_test:]
    return x[tr], y[tr], x[te], y[te]
