"""Rule truth: true-map estimates c(s) at every hold-out score of each calibrated model."""
import time

from fitontest.study import truth
from fitontest.core.io import load_npz, save_npz, script_logger
from fitontest.core.runtime import limit_threads

log = script_logger(snakemake.log[0])
limit_threads(snakemake.threads)
for src, out in zip(snakemake.input, snakemake.output):
    d = load_npz(src)
    maps = {}
    for name in snakemake.params.truths:
        t0 = time.perf_counter()
        maps[name] = truth.estimate(name, d["holdout_scores"], d["holdout_labels"],
                                    posterior=d.get("holdout_posterior"))
        log.info("%s: %s in %.2fs", src, name, time.perf_counter() - t0)
    save_npz(out, **maps)
