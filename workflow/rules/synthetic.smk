# The synthetic study (docs/methods/07-synthetic.md §7): exact ground truth, no images.
# One job per (shape, evaluator) covers every CE level, size and seed; with
# batch.evaluators > 1 a batch of evaluators shares one job over every shape
# (a shape's fits take seconds: one Python start-up for all of them).


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
        shapes=lambda w: [w.shape],
        evaluators=lambda w: [w.evaluator],
        family_params=lambda w: evaluator_params([w.evaluator]),
        **SYNTHETIC_PARAMS,
    resources:
        mem_mb=4000,
    conda:
        CONDA_ENV
    script:
        "../scripts/synthetic_evaluate.py"


# batch.evaluators > 1: a batch of evaluators shares a job over every shape;
# the outputs shape by shape, each shape's evaluators in batch order
for _batch, _names in SYN_BATCHES.items():

    rule:
        name:
            f"synthetic_evaluate_{_batch}"
        output:
            [res(f"synthetic/{s}/{n}.parquet") for s in SYNTHETIC["shapes"] for n in _names],
        log:
            logpath(f"synthetic/{_batch}.log"),
        benchmark:
            res(f"benchmarks/synthetic_evaluate/{_batch}.tsv")
        params:
            shapes=SYNTHETIC["shapes"],
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
