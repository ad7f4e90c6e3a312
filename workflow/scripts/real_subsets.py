"""Rule real_subsets: disjoint test subsets of every size (n_test // size of each)."""
from fitontest.core.io import load_npz, save_subsets, script_logger
from fitontest.data.logits import real_subsets

log = script_logger(snakemake.log[0])
n_test = len(load_npz(snakemake.input[0])["labels"])
subsets = real_subsets(n_test, snakemake.params.sizes, snakemake.params.seed)
save_subsets(snakemake.output[0], subsets)
log.info("%d test points: %s", n_test, sorted(subsets))
