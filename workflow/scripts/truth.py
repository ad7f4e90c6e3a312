"""Rule truth: true-map estimates c(s) at every hold-out score of each calibrated model."""
import time

from fitontest.study import truth
from fitontest.core.io import load_npz, save_npz, script_logger
from fitontest.core.runtime import limit_threads

log = script_logger(snakemake.log[0])
limit_threads(snakemake.threads)
for src, out in zip(snakemake.input, snakemake.output):
    d = load_npz(src)
    t0 = time.perf_counter()
    # every estimator on the same points: the order-free ones share one sort
    maps = truth.estimate_all(snakemake.params.truths, d["holdout_scores"],
                              d["holdout_labels"], posterior=d.get("holdout_posterior"))
    save_npz(out, **maps)
    log.info("%s: %s in %.2fs", src, ", ".join(maps), time.perf_counter() - t0)
