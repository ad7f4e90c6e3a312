# Stage 5: fit every evaluator on the test subsets of the hold-out and score it.
# One job per (arch, task, evaluator) covers every evaluated calibrator, size
# and seed: a few hundred jobs for the paper's grid, not tens of thousands.


rule evaluate:
    input:
        calibrated=per_calibrator("calibrated/{arch}/{task}/{calibrator}.npz", EVAL_CALIBRATORS),
        truth=per_calibrator("truth/{arch}/{task}/{calibrator}.npz", EVAL_CALIBRATORS),
        subsets=res("data/subsets.npz"),
    output:
        per_calibrator("scores/{arch}/{task}/{calibrator}/{evaluator}.parquet", EVAL_CALIBRATORS),
    log:
        logpath("evaluate/{arch}/{task}/{evaluator}.log"),
    wildcard_constraints:
        evaluator=alternatives(EVALUATORS),
    params:
        calibrators=EVAL_CALIBRATORS,
        family_params=lambda w: config["family_params"].get(w.evaluator, {}),
        seed=config["seed"],
    resources:
        mem_mb=8000,
    conda:
        CONDA_ENV
    script:
        "../scripts/evaluate.py"


# External evaluators (README, "Adding an evaluator"): a rule in
# workflow/rules/evaluators/ writes external/{arch}/{task}/{calibrator}/{name}.npz;
# this rule scores it exactly like a Python family.
rule score_external:
    input:
        external=res("external/{arch}/{task}/{calibrator}/{evaluator}.npz"),
        calibrated=res("calibrated/{arch}/{task}/{calibrator}.npz"),
        truth=res("truth/{arch}/{task}/{calibrator}.npz"),
        subsets=res("data/subsets.npz"),
    output:
        res("scores/{arch}/{task}/{calibrator}/{evaluator}.parquet"),
    log:
        logpath("evaluate/{arch}/{task}/{calibrator}/{evaluator}.log"),
    wildcard_constraints:
        evaluator=alternatives(EXTERNAL_EVALUATORS),
        calibrator=alternatives(EVAL_CALIBRATORS),
    conda:
        CONDA_ENV
    script:
        "../scripts/score_external.py"


rule collect_scores:
    input:
        score_files,
    output:
        res("scores.parquet"),
    log:
        logpath("collect_scores.log"),
    conda:
        CONDA_ENV
    script:
        "../scripts/collect.py"


rule calibrator_metrics:
    input:
        calibrated=expand(res("calibrated/{arch}/{task}/{calibrator}.npz"),
                          exp=config["exp"], arch=ARCHS, task=TASKS, calibrator=CALIBRATORS),
        truth=expand(res("truth/{arch}/{task}/{calibrator}.npz"),
                     exp=config["exp"], arch=ARCHS, task=TASKS, calibrator=CALIBRATORS),
    output:
        res("calibrators.parquet"),
    log:
        logpath("calibrator_metrics.log"),
    params:
        multiclass=MULTICLASS_CALIBRATORS,
    conda:
        CONDA_ENV
    script:
        "../scripts/calibrator_metrics.py"
