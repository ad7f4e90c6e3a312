"""Rule split: the train/val/hold-out indices and the test subsets of the hold-out."""
from fitontest.data import sources, split
from fitontest.core.io import save_subsets, script_logger
from fitontest.core.runtime import limit_threads

log = script_logger(snakemake.log[0])
limit_threads(snakemake.threads)
cfg = snakemake.params.data
source = sources.open_source(cfg)
parts = split.split_for_source(cfg, source)
split.write_split(snakemake.output.split, parts,
                  meta={"data_source": cfg["data_source"], "n_images": int(source.n_images),
                        **cfg["split"]})
log.info("split of %d images: %s", source.n_images,
         {k: len(v) for k, v in parts.items()})
p = snakemake.params
units = [tuple(u) for u in p.units]
drawn = split.design_subsets(p.design, cfg["split"]["n_holdout"], p.sizes, p.seeds, units)
for unit, out in zip(units, snakemake.output.subsets):
    save_subsets(out, drawn[unit])
log.info("test subsets (design %s): %s per (network, task)", p.design, sorted(drawn[units[0]]))
