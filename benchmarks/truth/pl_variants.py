"""PL / PL3: optimizer="lbfgs" (full-batch L-BFGS) against the paper's Adam, on the synthetic shapes.

For every shape, CE level, size and seed of the slice, both variants of each
family are fitted on the same sample (same folds, same candidates, same
complexity rule) and scored on one test sample whose true map is known
(docs/methods/07-synthetic.md §7). Printed per family and size: mean CMEE (x1000) of each
variant and its difference, the largest |difference|, how often the chosen
number of pieces is the same, the mean training loss of the chosen models
(lower = nearer the optimum of the fitted objective) and the CPU seconds of
all fits. Also: the mean CE error (x1000, |CE estimate - true CE| of the
fitting sample, the estimate being mean |c_hat(p) - p|).

    nice -n 10 python benchmarks/truth/pl_variants.py                  # 5 shapes x CE {0, .05, .1} x n {1000, 3000, 10000}
    nice -n 10 python benchmarks/truth/pl_variants.py --sizes 1000 --families pl3_ce

Parity of two versions of the default (Adam) fit on the same slice: record
the fits of one version (chosen pieces, CMEE, test predictions, every
model's epochs), then refit with another and compare (same pieces, CMEE
difference, prediction difference, models that stopped at the same epoch):

    PYTHONPATH=/path/to/old/src python benchmarks/truth/pl_variants.py --record old.npz
    python benchmarks/truth/pl_variants.py --compare old.npz
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from fitontest import families
from fitontest.metrics import cmee
from fitontest.data import synthetic
from fitontest.data.synthetic import SHAPES

OPT = {"ours": "lbfgs", "paper": "adam"}       # the paper's optimiser: Adam (the default)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", nargs="+", default=["pl_ce", "pl3_ce"])
    ap.add_argument("--sizes", nargs="+", type=int, default=[1000, 3000, 10000])
    ap.add_argument("--levels", nargs="+", type=float, default=[0.0, 0.05, 0.1])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0])
    ap.add_argument("--n-test", type=int, default=200_000)
    ap.add_argument("--record", metavar="NPZ", help="save the default fits here (parity)")
    ap.add_argument("--compare", metavar="NPZ", help="refit and compare with a --record file")
    args = ap.parse_args()
    if args.record or args.compare:
        parity(args)
        return
    print(f"slice: shapes {list(SHAPES)}, CE {args.levels}, seeds {args.seeds}, "
          f"n_test {args.n_test}; CMEE and CE error x1000 (paper = Adam minus ours = L-BFGS in 'diff')")
    print(f"{'family':7s} {'n':>6s} {'fits':>4s} {'CMEE ours':>9s} {'paper':>7s} {'diff':>7s} "
          f"{'max|d|':>7s} {'same k':>6s} {'CEerr ours':>10s} {'paper':>6s} "
          f"{'loss ours-paper':>15s} {'cpu ours':>8s} {'paper':>7s}")
    tests = {(sh, ce): synthetic.test_sample(sh, ce, args.n_test, seed=0)
             for sh in SHAPES for ce in args.levels}
    for fam in args.families:
        for n in args.sizes:
            cm = {"ours": [], "paper": []}
            cee = {"ours": [], "paper": []}
            k = {"ours": [], "paper": []}
            loss = {"ours": [], "paper": []}
            cpu = {"ours": 0.0, "paper": 0.0}
            for (sh, ce), (pt, ct) in tests.items():
                for seed in args.seeds:
                    p, y, c = synthetic.sample(sh, ce, n, seed)
                    true_ce = np.mean(np.abs(p - c))
                    for v in cm:
                        t0 = time.process_time()
                        f = families.get(fam, optimizer=OPT[v]).fit(p, y)
                        cpu[v] += time.process_time() - t0
                        cm[v].append(cmee(f.predict(pt), ct))
                        cee[v].append(abs(np.mean(np.abs(f.predict(p) - p)) - true_ce))
                        k[v].append(f.n_pieces_)
                        loss[v].append(f.train_loss_[:, f.n_knots_].mean())
            d = 1000 * (np.array(cm["paper"]) - np.array(cm["ours"]))
            same = np.mean(np.array(k["ours"]) == np.array(k["paper"]))
            dl = np.mean(np.array(loss["ours"]) - np.array(loss["paper"]))
            print(f"{fam:7s} {n:6d} {len(d):4d} {1000 * np.mean(cm['ours']):9.3f} "
                  f"{1000 * np.mean(cm['paper']):7.3f} {d.mean():+7.3f} {np.abs(d).max():7.3f} "
                  f"{same:6.0%} {1000 * np.mean(cee['ours']):10.3f} "
                  f"{1000 * np.mean(cee['paper']):6.3f} {dl:+15.2e} {cpu['ours']:8.1f} "
                  f"{cpu['paper']:7.1f}", flush=True)


def _default_fits(args):
    """{key: arrays} of the default fit of every family, size, shape, CE, seed."""
    out, cpu = {}, {}
    tests = {(sh, ce): synthetic.test_sample(sh, ce, args.n_test, seed=0)
             for sh in SHAPES for ce in args.levels}
    for fam in args.families:
        for n in args.sizes:
            for (sh, ce), (pt, ct) in tests.items():
                for seed in args.seeds:
                    p, y, _ = synthetic.sample(sh, ce, n, seed)
                    t0 = time.process_time()
                    f = families.get(fam).fit(p, y)
                    cpu[fam, n] = cpu.get((fam, n), 0.0) + time.process_time() - t0
                    pred = f.predict(pt)
                    key = f"{fam}|{n}|{sh}|{ce}|{seed}"
                    out.update({key + "|k": f.n_pieces_, key + "|cmee": cmee(pred, ct),
                                key + "|pred": pred[:5000], key + "|epochs": f.n_epochs_})
            print(f"{fam:7s} n={n:6d}: CPU {cpu[fam, n]:6.1f} s for "
                  f"{len(tests) * len(args.seeds)} fits", flush=True)
    return out


def parity(args) -> None:
    new = _default_fits(args)
    if args.record:
        np.savez(args.record, **new)
        return
    old = np.load(args.compare)
    print(f"{'family':7s} {'n':>6s} {'fits':>4s} {'same k':>6s} {'max|dCMEE|':>10s} "
          f"{'max|dpred|':>10s} {'models, same epochs':>19s}")
    for fam in args.families:
        for n in args.sizes:
            keys = [k[:-2] for k in new if k.startswith(f"{fam}|{n}|") and k.endswith("|k")]
            same = sum(int(old[k + "|k"]) == int(new[k + "|k"]) for k in keys)
            dc = max(abs(float(old[k + "|cmee"]) - float(new[k + "|cmee"])) for k in keys)
            dp = max(np.abs(old[k + "|pred"] - new[k + "|pred"]).max() for k in keys)
            ep = np.concatenate([(old[k + "|epochs"] == new[k + "|epochs"]).ravel() for k in keys])
            print(f"{fam:7s} {n:6d} {len(keys):4d} {same:3d}/{len(keys):<2d} {dc:10.1e} {dp:10.1e} "
                  f"{ep.sum():9d}/{ep.size:<9d}")


if __name__ == "__main__":
    main()
