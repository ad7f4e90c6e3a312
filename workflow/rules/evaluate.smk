# Stage 5: fit every evaluator on the test subsets of the hold-out and score it.
# One job per (arch, evaluator) covers every task, evaluated calibrator, size
# and seed, and writes scores/{arch}/{evaluator}.parquet. With batch.evaluators
# > 1 (config/README.md) the evaluators that fit on one thread share a job per
# network in chunks (rules evaluate_batchN): one Python start-up and one read of
# the inputs for hundreds of fits, the same file per evaluator.

EVALUATE_INPUT = dict(
    calibrated=per_task_calibrator("calibrated/{arch}/{task}/{calibrator}.npz"),
    truth=per_task_calibrator("truth/{arch}/{task}/{calibrator}.npz"),
    subsets=per_task("data/subsets/{arch}/{task}.npz"),
)
EVALUATE_PARAMS = dict(
    pairs=[(t, c) for t in TASKS for c in EVAL_CALIBRATORS],
    tasks=TASKS,
    seed=config["seed"],
    interval=config["evaluation"]["interval"],
    design=EVAL["subsets"],
    network=network_columns,
)


rule evaluate:
    input:
        **EVALUATE_INPUT,
    output:
        res("scores/{arch}/{evaluator}.parquet"),
    log:
        logpath("evaluate/{arch}/{evaluator}.log"),
    benchmark:
        res("benchmarks/evaluate/{arch}/{evaluator}.tsv")
    wildcard_constraints:
        evaluator=alternatives(EVAL_SINGLE),
    params:
        evaluators=lambda w: [w.evaluator],
        family_params=lambda w: evaluator_params([w.evaluator]),
        **EVALUATE_PARAMS,
    resources:
        mem_mb=8000,
    conda:
        CONDA_ENV
    script:
        "../scripts/evaluate.py"


for _batch, _names in EVAL_BATCHES.items():

    rule:
        name:
            f"evaluate_{_batch}"
        input:
            **EVALUATE_INPUT,
        output:
            expand(res("scores/{arch}/{evaluator}.parquet"), evaluator=_names, allow_missing=True),
        log:
            logpath(f"evaluate/{{arch}}/{_batch}.log"),
        benchmark:
            res(f"benchmarks/evaluate/{{arch}}/{_batch}.tsv")
        params:
            evaluators=_names,
            family_params=evaluator_params(_names),
            **EVALUATE_PARAMS,
        # the PL / PL3 batch, the longest job, first: the others fill the other cores
        priority: PRIORITY["evaluate_long"] if set(_names) & set(threaded(EVALUATORS)) else 0
        resources:
            mem_mb=8000,
        conda:
            CONDA_ENV
        script:
            "../scripts/evaluate.py"


# External evaluators (docs/guide/adding-an-evaluator.md): a rule in
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
        network=network_columns,
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
    params:
        order=SCORE_ORDER,
    conda:
        CONDA_ENV
    script:
        "../scripts/collect.py"


rule calibrator_metrics:
    input:
        calibrated=calibrator_metric_files("calibrated"),
        truth=calibrator_metric_files("truth"),
        draws=calibrator_draw_files,
    output:
        res("calibrators.parquet"),
    log:
        logpath("calibrator_metrics.log"),
    benchmark:
        res("benchmarks/calibrator_metrics.tsv")
    params:
        multiclass=MULTICLASS_CALIBRATORS,
        networks={n: net.columns(n) for n, net in NETWORKS.items()},
    conda:
        CONDA_ENV
    script:
        "../scripts/calibrator_metrics.py"
