"""Rule tabular_posterior: the exact class posterior of the hold-out rows, once for every classifier."""
import numpy as np

from fitontest.core.io import save_npz, script_logger
from fitontest.core.runtime import limit_threads
from fitontest.data import sources, split

log = script_logger(snakemake.log[0])
limit_threads(snakemake.threads)
source = sources.open_source(snakemake.params.data)
idx = split.read_split(snakemake.input.split)["holdout"]
X, _ = source.load(idx)
save_npz(snakemake.output[0], posterior=source.generator.posterior(X).astype(np.float32))
log.info("posterior of %d hold-out rows", idx.size)
