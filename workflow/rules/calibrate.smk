# Stage 3: post-hoc calibrators fitted on the validation split.
# Multi-class calibrators work on logits, then every binary task is reduced;
# binary calibrators work on the reduced scores of the uncalibrated model.
# One job per (arch, calibrator) covers every task.


rule calibrate_multiclass:
    input:
        val=res("logits/{arch}/val.npz"),
        holdout=res("logits/{arch}/holdout.npz"),
    output:
        per_task("calibrated/{arch}/{task}/{calibrator}.npz"),
    log:
        logpath("calibrate/{arch}/{calibrator}.log"),
    benchmark:
        res("benchmarks/calibrate_multiclass/{arch}/{calibrator}.tsv")
    wildcard_constraints:
        calibrator=alternatives(MULTICLASS_CALIBRATORS),
    params:
        tasks=config["tasks"],
    resources:
        mem_mb=8000,
    conda:
        CONDA_ENV
    script:
        "../scripts/calibrate_multiclass.py"


rule calibrate_binary:
    input:
        per_task("calibrated/{arch}/{task}/none.npz"),
    output:
        per_task("calibrated/{arch}/{task}/{calibrator}.npz"),
    log:
        logpath("calibrate/{arch}/{calibrator}.log"),
    benchmark:
        res("benchmarks/calibrate_binary/{arch}/{calibrator}.tsv")
    wildcard_constraints:
        calibrator=alternatives(BINARY_CALIBRATORS),
    params:
        tasks=TASKS,
        family_params=lambda w: config["family_params"].get(w.calibrator, {}),
        seed=config["seed"],
    resources:
        mem_mb=8000,
    conda:
        CONDA_ENV
    script:
        "../scripts/calibrate_binary.py"


# Replicates of Table 2 (docs/methods.md §6.4): every calibrator refitted on
# `calibrators.draws` further validation draws of the hold-out, with its
# metrics measured on the rest; one job per network, no evaluator.
rule calibrator_draws:
    input:
        holdout=res("logits/{arch}/holdout.npz"),
    output:
        res("calibrator_draws/{arch}.parquet"),
    log:
        logpath("calibrator_draws/{arch}.log"),
    benchmark:
        res("benchmarks/calibrator_draws/{arch}.tsv")
    params:
        draws=config["calibrators"]["draws"],
        n_val=config.get("split", {}).get("n_val"),    # no split: a logits source
        tasks=config["tasks"],
        multiclass=MULTICLASS_CALIBRATORS,
        binary=BINARY_CALIBRATORS,
        truths=config["truth"],
        family_params=config["family_params"],
        seed=config["seed"],
    resources:
        mem_mb=8000,
    conda:
        CONDA_ENV
    script:
        "../scripts/calibrator_draws.py"
