"""Rules calibrate_multiclass(_batchN): fit on validation logits, reduce to every binary task."""
import numpy as np

from fitontest import multiclass
from fitontest import tasks
from fitontest.study.tasks import event_posterior
from fitontest.core.io import load_npz, save_npz, script_logger
from fitontest.core.runtime import limit_threads

log = script_logger(snakemake.log[0])
limit_threads(snakemake.threads)
task_ids = snakemake.params.tasks
val, hold = load_npz(snakemake.input.val), load_npz(snakemake.input.holdout)
z_val, z_hold = val["logits"].astype(np.float64), hold["logits"].astype(np.float64)
# the outputs: every task of the first calibrator, then of the next, ...
outputs = iter(snakemake.output)
for name in snakemake.params.calibrators:
    cal = multiclass.get(name).fit(z_val, val["labels"])
    log.info("fitted %s: %s", name, {k: v for k, v in vars(cal).items()
                                     if k.endswith("_") and np.isscalar(v)})
    p_val, p_hold = cal.predict_proba(z_val), cal.predict_proba(z_hold)
    for (task, k), out in zip(task_ids.items(), outputs):
        s_val, y_val = tasks.reduce(k, p_val, val["labels"])
        s_hold, y_hold = tasks.reduce(k, p_hold, hold["labels"])
        extra = {}
        if "posterior" in hold:
            extra["holdout_posterior"] = event_posterior(k, p_hold, hold["posterior"])
        save_npz(out, val_scores=s_val, val_labels=y_val.astype(np.int8),
                 holdout_scores=s_hold, holdout_labels=y_hold.astype(np.int8), **extra)
        log.info("%s / %s: val %d, hold-out %d points, mean score %.4f, positive rate %.4f",
                 name, task, s_val.size, s_hold.size, s_hold.mean(), y_hold.mean())
