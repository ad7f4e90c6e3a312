"""Rule calibrator_draws: Table 2's draws of one network, each on its own hold-out slice."""
from pathlib import Path

from fitontest.core.io import load_npz, save_parquet, script_logger
from fitontest.core.runtime import limit_threads
from fitontest.study.draws import calibrator_draws

log = script_logger(snakemake.log[0])
limit_threads(snakemake.threads)
p = snakemake.params
# draw 0: the study's own calibrated files, (task, calibrator) -> path (read one at a time)
study = {(Path(f).parent.name, Path(f).stem): f for f in snakemake.input.calibrated}
rows = calibrator_draws(load_npz(snakemake.input.holdout), p.n_val, p.draws, p.tasks,
                        p.multiclass, p.binary, p.truths, arch=snakemake.wildcards.arch,
                        config_params=p.family_params, seed=p.seed, validation=study,
                        log=log.info)
save_parquet(rows, snakemake.output[0])
