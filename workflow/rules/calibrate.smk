# Stage 3: post-hoc calibrators fitted on the validation split.
# Multi-class calibrators work on logits, then every binary task is reduced;
# binary calibrators work on the reduced scores of the uncalibrated model.
# One job per (arch, calibrator) covers every task (or per arch and batch of
# calibrators: batch.calibrators, config/README.md).


CALIBRATE_MULTICLASS = dict(
    input=dict(val=res("logits/{arch}/val.npz"), holdout=res("logits/{arch}/holdout.npz")),
    params=dict(tasks=config["tasks"]),
)
CALIBRATE_BINARY = dict(
    input=per_task("calibrated/{arch}/{task}/none.npz"),
    params=dict(tasks=TASKS, seed=config["seed"]),
)


rule calibrate_multiclass:
    input:
        **CALIBRATE_MULTICLASS["input"],
    output:
        per_task("calibrated/{arch}/{task}/{calibrator}.npz"),
    log:
        logpath("calibrate/{arch}/{calibrator}.log"),
    benchmark:
        res("benchmarks/calibrate_multiclass/{arch}/{calibrator}.tsv")
    wildcard_constraints:
        calibrator=alternatives(MULTICLASS_SINGLE),
    params:
        calibrators=lambda w: [w.calibrator],
        **CALIBRATE_MULTICLASS["params"],
    priority: PRIORITY["calibrate_multiclass"]
    resources:
        mem_mb=8000,
    conda:
        CONDA_ENV
    script:
        "../scripts/calibrate_multiclass.py"


rule calibrate_binary:
    input:
        CALIBRATE_BINARY["input"],
    output:
        per_task("calibrated/{arch}/{task}/{calibrator}.npz"),
    log:
        logpath("calibrate/{arch}/{calibrator}.log"),
    benchmark:
        res("benchmarks/calibrate_binary/{arch}/{calibrator}.tsv")
    wildcard_constraints:
        calibrator=alternatives(BINARY_SINGLE),
    params:
        calibrators=lambda w: [w.calibrator],
        family_params=lambda w: evaluator_params([w.calibrator]),
        **CALIBRATE_BINARY["params"],
    priority: PRIORITY["calibrate_binary"]
    resources:
        mem_mb=8000,
    conda:
        CONDA_ENV
    script:
        "../scripts/calibrate_binary.py"


# batch.calibrators > 1: calibrators of a network share a job (one file per
# task and calibrator, as above)
for _batch, _names in MULTICLASS_BATCHES.items():

    rule:
        name:
            f"calibrate_multiclass_{_batch}"
        input:
            **CALIBRATE_MULTICLASS["input"],
        output:
            calibrated(_names),
        log:
            logpath(f"calibrate/{{arch}}/multiclass_{_batch}.log"),
        benchmark:
            res(f"benchmarks/calibrate_multiclass/{{arch}}/{_batch}.tsv")
        params:
            calibrators=_names,
            **CALIBRATE_MULTICLASS["params"],
        priority: PRIORITY["calibrate_multiclass"]
        resources:
            mem_mb=8000,
        conda:
            CONDA_ENV
        script:
            "../scripts/calibrate_multiclass.py"


for _batch, _names in BINARY_BATCHES.items():

    rule:
        name:
            f"calibrate_binary_{_batch}"
        input:
            CALIBRATE_BINARY["input"],
        output:
            calibrated(_names),
        log:
            logpath(f"calibrate/{{arch}}/binary_{_batch}.log"),
        benchmark:
            res(f"benchmarks/calibrate_binary/{{arch}}/{_batch}.tsv")
        params:
            calibrators=_names,
            family_params=evaluator_params(_names),
            **CALIBRATE_BINARY["params"],
        priority: PRIORITY["calibrate_binary"]
        resources:
            mem_mb=8000,
        conda:
            CONDA_ENV
        script:
            "../scripts/calibrate_binary.py"


# Table 2's replicates (docs/methods/06-truth-and-scores.md §6.4): every calibrator refitted on
# `calibrators.draws` validation draws of the hold-out, each fitted and measured
# on its own points of the network's permutation; one job per network, no evaluator.
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
        network=network_columns,
    resources:
        mem_mb=8000,
    conda:
        CONDA_ENV
    script:
        "../scripts/calibrator_draws.py"
