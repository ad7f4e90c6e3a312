"""External evaluator example: equal-width ECE with 10 bins (numpy only).

Contract (docs/guide/adding-an-evaluator.md): read the hold-out scores/labels of
one calibrated model and the test subsets; for every (size, seed) fit on the
subset and write the map at every hold-out score (``c_hat``) and/or the CE
estimate (``ce_est``), with ``size`` and ``seed`` arrays naming the rows.
"""
import numpy as np

N_BINS = 10


def slope1_map(fit_s, fit_y, s):
    """Equal-width slope-1 binning map fitted on (fit_s, fit_y), evaluated at s."""
    def bin_of(x):
        return np.minimum((x * N_BINS).astype(np.int64), N_BINS - 1)

    b = bin_of(fit_s)
    n = np.bincount(b, minlength=N_BINS)
    gap = (np.bincount(b, fit_y, N_BINS) - np.bincount(b, fit_s, N_BINS)) / np.maximum(n, 1)
    return s + gap[bin_of(s)]  # empty bins have gap 0: the identity


with open(snakemake.log[0], "w") as log:
    cal = np.load(snakemake.input.calibrated)
    s_hold, y_hold = cal["holdout_scores"], cal["holdout_labels"].astype(np.float64)
    subsets = np.load(snakemake.input.subsets)
    sizes, seeds, c_hats, ces = [], [], [], []
    for key in sorted(subsets.files):
        size, seed = (int(v) for v in key.removeprefix("size").split("_seed"))
        pos = subsets[key]
        c_hat = slope1_map(s_hold[pos], y_hold[pos], s_hold)
        sizes.append(size)
        seeds.append(seed)
        c_hats.append(c_hat.astype(np.float32))
        ces.append(np.mean(np.abs(c_hat[pos] - s_hold[pos])))
        print(f"{key}: ECE-EW10 = {ces[-1]:.5f}", file=log)
    np.savez(snakemake.output[0], size=np.array(sizes), seed=np.array(seeds),
             c_hat=np.stack(c_hats), ce_est=np.array(ces))
