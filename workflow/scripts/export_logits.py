"""Rule export_logits: logits of one trained network on one split, in chunks."""
from fitontest import train
from fitontest.data import sources, split
from fitontest.io import limit_threads, script_logger

log = script_logger(snakemake.log[0])
limit_threads(snakemake.threads)
training = snakemake.params.training
source = sources.open_source(snakemake.params.data)
idx = split.read_split(snakemake.input.split)[snakemake.wildcards.split]
train.export_logits(snakemake.input.model, source, idx, snakemake.output[0],
                    device=training["device"], batch_size=training["export_batch_size"],
                    log=log.info, progress=training["progress"], num_threads=snakemake.threads)
