"""Rule calibrate_multiclass: fit on validation logits, reduce to every binary task."""
import numpy as np

from fitontest import multiclass
from fitontest.study import tasks
from fitontest.core.io import load_npz, save_npz, script_logger
from fitontest.core.runtime import limit_threads

log = script_logger(snakemake.log[0])
limit_threads(snakemake.threads)
name = snakemake.wildcards.calibrator
val, hold = load_npz(snakemake.input.val), load_npz(snakemake.input.holdout)
cal = multiclass.get(name).fit(val["logits"].astype(np.float64), val["labels"])
log.info("fitted %s: %s", name, {k: v for k, v in vars(cal).items()
                                 if k.endswith("_") and np.isscalar(v)})
p_val = cal.predict_proba(val["logits"].astype(np.float64))
p_hold = cal.predict_proba(hold["logits"].astype(np.float64))
for (task, k), out in zip(snakemake.params.tasks.items(), snakemake.output):
    s_val, y_val = tasks.reduce(k, p_val, val["labels"])
    s_hold, y_hold = tasks.reduce(k, p_hold, hold["labels"])
    extra = {}
    if "posterior" in hold:
        extra["holdout_posterior"] = tasks.event_posterior(k, p_hold, hold["posterior"])
    save_npz(out, val_scores=s_val, val_labels=y_val.astype(np.int8),
             holdout_scores=s_hold, holdout_labels=y_hold.astype(np.int8), **extra)
    log.info("%s: val %d, hold-out %d points, mean score %.4f, positive rate %.4f",
             task, s_val.size, s_hold.size, s_hold.mean(), y_hold.mean())
