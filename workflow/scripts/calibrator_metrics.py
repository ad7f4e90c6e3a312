"""Rule calibrator_metrics: CEAC and CMEE of every calibrator on the hold-out (Table 2)."""
from pathlib import Path

import pandas as pd

from fitontest.study.experiment import calibrator_rows
from fitontest.core.io import load_npz, save_parquet, script_logger
from fitontest.core.runtime import limit_threads
from fitontest.study.schema import CALIBRATOR_COLUMNS, CALIBRATOR_DRAW

log = script_logger(snakemake.log[0])
limit_threads(snakemake.threads)
multiclass = set(snakemake.params.multiclass)
truth_files = {Path(p).parts[-3:]: p for p in snakemake.input.truth}
rows = []
for cal_path in snakemake.input.calibrated:
    network, task, fname = Path(cal_path).parts[-3:]
    cal = fname.removesuffix(".npz")
    kind = "none" if cal == "none" else ("multiclass" if cal in multiclass else "binary")
    d = load_npz(cal_path)
    for row in calibrator_rows(kind, d["holdout_scores"], d["holdout_labels"],
                               load_npz(truth_files[(network, task, fname)]),
                               load_npz(truth_files[(network, task, "none.npz")])):
        rows.append({**snakemake.params.networks[network], "task": task, "calibrator": cal,
                     **row})
# draws: 0 -> the study's own fits (draw 0); else the draws 1, 2, ... of rule calibrator_draws
own = [pd.DataFrame(rows)[CALIBRATOR_COLUMNS].assign(**{CALIBRATOR_DRAW: 0})] if rows else []
frame = pd.concat(own + [pd.read_parquet(p) for p in snakemake.input.draws], ignore_index=True)
save_parquet(frame, snakemake.output[0])
log.info("%d calibrator rows (%d of the study's own fits)", len(frame), len(rows))
