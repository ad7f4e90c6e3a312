"""Rule tabular_fit: a scikit-learn classifier's logits on validation and hold-out."""
import time

import numpy as np

from fitontest.core.io import load_npz, save_npz, script_logger
from fitontest.core.runtime import limit_threads
from fitontest.data import sources, split
from fitontest.models import tabular

log = script_logger(snakemake.log[0])
limit_threads(snakemake.threads)
source = sources.open_source(snakemake.params.data)
parts = split.read_split(snakemake.input.split)
clf = tabular.get(snakemake.params.model, seed=snakemake.params.seed,
                  generator=source.generator)
X, y = source.load(parts["train"])
t0 = time.perf_counter()
clf.fit(X, y)
log.info("%s fitted on %d rows in %.2fs", snakemake.params.model, len(y), time.perf_counter() - t0)
for part, out in (("val", snakemake.output.val), ("holdout", snakemake.output.holdout)):
    idx = parts[part]
    X, y = source.load(idx)
    z = tabular.log_proba(clf, X, source.num_classes)
    extra = {}
    if part == "holdout":
        # the exact class posterior lets the truth stage use it (truth "posterior")
        post = load_npz(snakemake.input.posterior)
        if not np.array_equal(post["indices"], idx):
            raise ValueError(f"{snakemake.input.posterior} holds the posterior of other rows than "
                             f"the hold-out of {snakemake.input.split}: delete it and rerun")
        extra["posterior"] = post["posterior"]
    save_npz(out, logits=z, labels=y, indices=idx, **extra)
    log.info("%s: %d rows, accuracy %.4f", part, len(y), float((z.argmax(1) == y).mean()))
