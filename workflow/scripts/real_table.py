"""Rule real_table: the real-data bias table and its rank agreement (fitontest.report.real)."""
import pandas as pd

from fitontest.core.io import optional_input, script_logger
from fitontest.report.real import write_real_tables

log = script_logger(snakemake.log[0])
for note in snakemake.params.notes:
    log.info("data: %s", note)
pseudo_path = optional_input(snakemake.input.pseudo)
pseudo = None if pseudo_path is None else pd.read_parquet(pseudo_path)
p = snakemake.params
agreement = write_real_tables(pd.read_parquet(snakemake.input.real), pseudo,
                              snakemake.output.bias, snakemake.output.agreement,
                              snakemake.output.md, truth=p.truth, level=p.level,
                              n_boot=p.n_boot, seed=p.seed, notes=p.notes)
log.info("rank agreement:\n%s", agreement.to_string())
