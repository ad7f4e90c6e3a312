# Stage 5: fit every evaluator on the test subsets of the hold-out and score it.
# One job per (arch, evaluator) covers every task, evaluated calibrator, size
# and seed: each job starts Python once for hundreds of fits, and the paper's
# grid stays at a few hundred jobs in all.


rule evaluate:
    input:
        calibrated=per_task_calibrator("calibrated/{arch}/{task}/{calibrator}.npz"),
        truth=per_task_calibrator("truth/{arch}/{task}/{calibrator}.npz"),
        subsets=per_task_calibrator("data/subsets/{arch}/{task}.npz"),
    output:
        per_task_calibrator("scores/{arch}/{task}/{calibrator}/{evaluator}.parquet"),
    log:
        logpath("evaluate/{arch}/{evaluator}.log"),
    benchmark:
        res("benchmarks/evaluate/{arch}/{evaluator}.tsv")
    wildcard_constraints:
        evaluator=alternatives(EVALUATORS),
    params:
        pairs=[(t, c) for t in TASKS for c in EVAL_CALIBRATORS],
        family_params=lambda w: config["family_params"].get(w.evaluator, {}),
        seed=config["seed"],
        interval=config["evaluation"]["interval"],
        design=EVAL["subsets"],
    threads: fit_threads
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
        subsets=res("data/subsets/{arch}/{task}.npz"),
    output:
        res("scores/{arch}/{task}/{calibrator}/{evaluator}.parquet"),
    log:
        logpath("evaluate/{arch}/{task}/{calibrator}/{evaluator}.log"),
    benchmark:
        res("benchmarks/score_external/{arch}/{task}/{calibrator}/{evaluator}.tsv")
    wildcard_constraints:
        evaluator=alternatives(EXTERNAL_EVALUATORS),
        calibrator=alternatives(EVAL_CALIBRATORS),
    params:
        design=EVAL["subsets"],
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
    benchmark:
        res("benchmarks/collect_scores.tsv")
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
        draws=calibrator_draw_files,
    output:
        res("calibrators.parquet"),
    log:
        logpath("calibrator_metrics.log"),
    benchmark:
        res("benchmarks/calibrator_metrics.tsv")
    params:
        multiclass=MULTICLASS_CALIBRATORS,
    conda:
        CONDA_ENV
    script:
        "../scripts/calibrator_metrics.py"
