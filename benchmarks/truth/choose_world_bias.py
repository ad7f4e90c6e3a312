"""Do the chooser's worlds get the evaluators' bias right? (docs/methods/14-chooser.md §14.3)

The chooser corrects an evaluator's estimate by its bias in worlds built from
the data (:mod:`fitontest.inference.worlds`). On test subsets with a known true map c
(benchmarks/truth/choose_truth.py's sources), three biases of each evaluator's used
CE estimate, mean (estimate - true CE):

- ``truth``: on the subsets themselves, against their true CE;
- ``oracle worlds``: worlds with the *true* map (the subset's scores
  resampled, labels redrawn from c): what a perfect world generator gives;
- ``chooser worlds``: the chooser's own worlds (``plausible_maps``: generator
  fits refitted on bootstrap resamples).

``truth`` is one label draw per subset (SE over subsets: large);
``oracle worlds`` is its expectation; ``chooser worlds`` - ``oracle worlds`` is
the error of the generators' maps.

    python benchmarks/truth/choose_world_bias.py --jobs 2       # ~6 min on 2 cores
"""
from __future__ import annotations

import argparse

import numpy as np
from choose_truth import MAKERS

from fitontest.inference.candidates import fit_used as _fit_used, world_losses
from fitontest.inference.worlds import plausible_maps

NAMES = ("smece", "beta", "ece_ew15", "ece_es_cv", "isotonic", "temp_1vsrest")


def biases(unit, label, s, y, c, worlds):
    """(3, E) mean signed CE errors: truth, oracle worlds, chooser worlds. ``unit``
    seeds the worlds: each subset its own draws (one stream for all would share
    the world noise across subsets, and the SE over subsets would miss it); the
    oracle and the chooser worlds of one subset share theirs (paired)."""
    true = np.mean(np.abs(s - c))
    out = np.empty((3, len(NAMES)))
    out[0] = [_fit_used(n, s, y, 1, None)[0] - true for n in NAMES]
    maps = plausible_maps(s, y, worlds, [0, 1, unit])[0]
    for row, mapset in ((1, [c] * worlds), (2, maps)):
        # the chooser's own world loop; row 3 of its losses is the signed CE error
        out[row] = np.mean([world_losses(w, [(s, m)], NAMES, 1, False, [5, unit])[3]
                            for w, m in enumerate(mapset)], axis=0)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sources", default="synthetic,tabular,procedural")
    ap.add_argument("--seeds", default="synthetic=3,tabular=12,procedural=24",
                    help="seeds per source, source=k,... (synthetic: 10 settings a "
                         "seed, tabular: 2 tasks a seed)")
    ap.add_argument("--first-seed", type=int, default=300)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--worlds", type=int, default=30)
    ap.add_argument("--jobs", type=int, default=1)
    a = ap.parse_args(argv)
    from joblib import Parallel, delayed

    print("Mean signed CE error x 1e-3 (± SE over subsets)\n")
    print("| source | bias of | " + " | ".join(NAMES) + " |")
    print("|---|---|" + "---|" * len(NAMES))
    counts = {k: int(v) for k, v in (kv.split("=") for kv in a.seeds.split(","))}
    for source in a.sources.split(","):
        seeds = range(a.first_seed, a.first_seed + counts.get(source, 3))
        b = np.stack(Parallel(n_jobs=a.jobs)(delayed(biases)(u, *sub, a.worlds)
                                             for u, sub in enumerate(MAKERS[source]([a.n], seeds))))
        se = b.std(axis=0, ddof=1) / np.sqrt(len(b))
        for r, what in enumerate(("truth", "oracle worlds", "chooser worlds")):
            print(f"| {source} ({len(b)}) | {what} | " + " | ".join(
                f"{1e3 * m:+.2f} ± {1e3 * e:.2f}" for m, e in zip(b.mean(0)[r], se[r])) + " |",
                flush=True)


if __name__ == "__main__":
    main()
