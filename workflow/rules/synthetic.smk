# The synthetic study (docs/methods.md §7): exact ground truth, no images.
# One job per (shape, evaluator) covers every CE level, size and seed (or per
# shape and batch of evaluators: batch.evaluators, as in evaluate.smk).


SYNTHETIC_PARAMS = dict(synthetic=SYNTHETIC, seed=config["seed"])


rule synthetic_evaluate:
    output:
        res("synthetic/{shape}/{evaluator}.parquet"),
    log:
        logpath("synthetic/{shape}/{evaluator}.log"),
    benchmark:
        res("benchmarks/synthetic_evaluate/{shape}/{evaluator}.tsv")
    wildcard_constraints:
        shape=alternatives(SYNTHETIC["shapes"]),
        evaluator=alternatives(SYN_SINGLE),
    params:
        evaluators=lambda w: [w.evaluator],
        family_params=lambda w: evaluator_params([w.evaluator]),
        **SYNTHETIC_PARAMS,
    resources:
        mem_mb=4000,
    conda:
        CONDA_ENV
    script:
        "../scripts/synthetic_evaluate.py"


# batch.evaluators > 1: the single-thread evaluators of a shape share a job
for _batch, _names in SYN_BATCHES.items():

    rule:
        name:
            f"synthetic_evaluate_{_batch}"
        output:
            expand(res("synthetic/{shape}/{evaluator}.parquet"), evaluator=_names,
                   allow_missing=True),
        log:
            logpath(f"synthetic/{{shape}}/{_batch}.log"),
        benchmark:
            res(f"benchmarks/synthetic_evaluate/{{shape}}/{_batch}.tsv")
        wildcard_constraints:
            shape=alternatives(SYNTHETIC["shapes"]),
        params:
            evaluators=_names,
            family_params=evaluator_params(_names),
            **SYNTHETIC_PARAMS,
        resources:
            mem_mb=4000,
        conda:
            CONDA_ENV
        script:
            "../scripts/synthetic_evaluate.py"


rule synthetic_collect:
    input:
        expand(res("synthetic/{shape}/{evaluator}.parquet"), exp=config["exp"],
               shape=SYNTHETIC["shapes"], evaluator=SYNTHETIC["evaluators"]),
    output:
        res("synthetic_scores.parquet"),
    log:
        logpath("synthetic/collect.log"),
    benchmark:
        res("benchmarks/synthetic_collect.tsv")
    params:
        order={},
    conda:
        CONDA_ENV
    script:
        "../scripts/collect.py"
