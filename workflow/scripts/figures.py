"""Rule figures: reliability diagrams, fit-on-test maps and the evaluator summary."""
import pandas as pd

from fitontest import figures
from fitontest.io import limit_threads, load_npz, script_logger

log = script_logger(snakemake.log[0])
limit_threads(snakemake.threads)
scores = pd.read_parquet(snakemake.input.scores)
calibrated = load_npz(snakemake.input.calibrated[0])
true_map = load_npz(snakemake.input.truth[0])[snakemake.params.truth]
write = figures.write_all_figures if snakemake.params.which == "all" else figures.write_default_figures
written = write(scores, snakemake.output[0], calibrated=calibrated, true_map=true_map,
                label=snakemake.params.label)
log.info("wrote %d figure files to %s", len(written), snakemake.output[0])
