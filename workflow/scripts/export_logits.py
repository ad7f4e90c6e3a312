"""Rule export_logits: logits of one trained network on validation and hold-out, in chunks."""
import numpy as np

from fitontest.vision.export import export_logits
from fitontest.data import sources, split
from fitontest.core.io import atomic_path, load_npz, script_logger
from fitontest.core.runtime import limit_threads

log = script_logger(snakemake.log[0])
limit_threads(snakemake.threads)
training = snakemake.params.training
source = sources.open_source(snakemake.params.data)
parts = split.read_split(snakemake.input.split)
for part in ("val", "holdout"):
    with atomic_path(snakemake.output[part], suffix=".npz") as tmp:
        # the job's threads as worker processes, each generating and running its blocks
        export_logits(snakemake.input.model, source, parts[part], tmp, device=training["device"],
                      batch_size=training["export_batch_size"], log=log.info,
                      progress=training["progress"], num_threads=snakemake.threads,
                      n_jobs=snakemake.threads)
        if source.has_posterior:
            # the known class posterior lets the truth stage estimate c(s) from it
            out = load_npz(tmp)
            np.savez(tmp, **out, posterior=source.posterior(out["indices"]).astype(np.float32))
            log.info("%s: added the known class posterior of %d images", part, len(parts[part]))
