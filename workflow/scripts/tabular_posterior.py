"""Rule tabular_posterior: the exact class posterior of the hold-out rows, once for every classifier."""
import numpy as np

from fitontest.core.io import save_npz, script_logger
from fitontest.core.runtime import limit_threads
from fitontest.data import sources, split

log = script_logger(snakemake.log[0])
limit_threads(snakemake.threads)
source = sources.open_source(snakemake.params.data)
# the hold-out rows of rule split, from the same config by the same function
idx = split.split_for_source(snakemake.params.data, source)["holdout"]
X, _ = source.load(idx)
save_npz(snakemake.output[0], posterior=source.generator.posterior(X).astype(np.float32),
         indices=idx)
log.info("posterior of %d hold-out rows", idx.size)
