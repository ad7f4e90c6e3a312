"""smECE here vs relplot.smECE when scores sit near 0 or 1 (docs/guide/your-predictions.md,
docs/methods/03-binary-families.md §3.10).

Scores within ``eps`` of 0 or 1 keep their full kernel mass here (the
reflection); relplot counts an end node once, so the two differ for scores
within about one grid cell (1e-3) of the ends and agree to rounding
elsewhere. Prints both for a sample in which 80 % of n = 2000 scores lie
within eps of 0 or 1 with true rates 0.3 / 0.7 (miscalibrated), for several eps.

    python benchmarks/truth/smece_relplot_ends.py        # needs relplot (the test extra)
"""
import warnings

import numpy as np
import relplot

from fitontest import families


#: the sample: n scores, k of them within eps of an end, true rate miss / 1 - miss there
N, K, MISS = 2000, 1600, 0.3


def main() -> None:
    warnings.simplefilter("ignore")
    print(f"sample: n = {N}, {K} scores ({100 * K / N:.0f} %) within eps of 0 or 1, true rates "
          f"{MISS} / {1 - MISS} there")
    for eps in (0.0, 1e-6, 1e-4, 1e-3, 3e-3, 1e-2):
        rng = np.random.default_rng(2)
        n, k, miss = N, K, MISS
        s = rng.uniform(0, 1, n)
        q = s.copy()
        near, side = rng.uniform(0, eps, k), rng.integers(0, 2, k)
        s[:k] = np.where(side == 1, 1 - near, near)
        q[:k] = np.where(side == 1, 1 - miss, miss)
        y = (rng.uniform(size=n) < q).astype(int)
        ours = families.get("smece").fit(s, y).ce_estimate(s)
        theirs = float(relplot.smECE(s, y))
        print(f"scores within {eps:<6g} of 0/1: fitontest {ours:.4f}  relplot {theirs:.4f}  "
              f"difference {abs(ours - theirs):.4f}")
    s = np.random.default_rng(3).uniform(0.01, 0.99, 3000)
    y = (np.random.default_rng(4).uniform(size=3000) < s).astype(int)
    d = abs(families.get("smece").fit(s, y).ce_estimate(s) - float(relplot.smECE(s, y)))
    print(f"no score within 0.01 of 0/1: difference {d:.1e}")


if __name__ == "__main__":
    main()
