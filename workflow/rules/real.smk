# The paper's real-data study (data_source logits; docs/methods/12-real-data.md §12): the
# logits of networks trained by others, read from files; calibrated by the
# calibrate rules as usual; every evaluator fitted on disjoint test subsets of
# each size; no truth, so the table compares average CE estimates (as biases
# against a row constant) with a pseudo-real run's biases.

# How the files are read and which sizes fit their test sets (read once per parse,
# remembered per file): probability files, guessed array names, split files and
# capped sizes are said in import_logits' log and in bias.md's caption.
if DATA_KIND == "logits":
    from fitontest.data.logits import study_facts

    REAL_FACTS = study_facts(config)
else:
    REAL_FACTS = {"sizes": [], "notes": []}


rule import_logits:
    output:
        val=res("logits/{arch}/val.npz"),
        holdout=res("logits/{arch}/holdout.npz"),
    log:
        logpath("logits/{arch}/import.log"),
    wildcard_constraints:
        arch=alternatives(NETWORKS if DATA_KIND == "logits" else []),
    params:
        data=data_params(),
    priority: PRIORITY["logits"]
    conda:
        CONDA_ENV
    script:
        "../scripts/import_logits.py"


ruleorder: import_logits > export_logits


rule real_subsets:
    input:
        res("logits/{arch}/holdout.npz"),
    output:
        res("real/subsets/{arch}.npz"),
    log:
        logpath("real/subsets/{arch}.log"),
    params:
        sizes=REAL_FACTS["sizes"],
        seed=EVAL["seeds"][0],
    conda:
        CONDA_ENV
    script:
        "../scripts/real_subsets.py"


rule real_evaluate:
    input:
        calibrated=per_task_calibrator("calibrated/{arch}/{task}/{calibrator}.npz"),
        subsets=res("real/subsets/{arch}.npz"),
    output:
        res("real/scores/{arch}/{evaluator}.parquet"),
    log:
        logpath("real/evaluate/{arch}/{evaluator}.log"),
    benchmark:
        res("benchmarks/real_evaluate/{arch}/{evaluator}.tsv")
    wildcard_constraints:
        evaluator=alternatives(EVALUATORS),
    params:
        pairs=[(t, c) for t in TASKS for c in EVAL_CALIBRATORS],
        family_params=lambda w: config["family_params"].get(w.evaluator, {}),
        seed=config["seed"],
        interval=EVAL["interval"],
    resources:
        mem_mb=4000,
    conda:
        CONDA_ENV
    script:
        "../scripts/real_evaluate.py"


rule real_collect:
    input:
        expand(res("real/scores/{arch}/{evaluator}.parquet"), exp=config["exp"], arch=NETWORKS,
               evaluator=EVALUATORS),
    output:
        res("real/scores.parquet"),
    log:
        logpath("real/collect.log"),
    params:
        order={},
    conda:
        CONDA_ENV
    script:
        "../scripts/collect.py"


rule real_table:
    input:
        real=res("real/scores.parquet"),
        pseudo=config["real"]["pseudo_real_scores"] or [],
    output:
        bias=res("real/bias.csv"),
        agreement=res("real/agreement.csv"),
        md=res("real/bias.md"),
    log:
        logpath("real/table.log"),
    params:
        truth=config["real"]["truth"] or config["truth"][0],
        level=config["real"]["level"],
        n_boot=config["real"]["n_boot"],
        seed=config["seed"],
        notes=REAL_FACTS["notes"],
    conda:
        CONDA_ENV
    script:
        "../scripts/real_table.py"
