# The synthetic study (docs/methods.md §7): exact ground truth, no images.
# One job per (shape, evaluator) covers every CE level, size and seed.


rule synthetic_evaluate:
    output:
        res("synthetic/{shape}/{evaluator}.parquet"),
    log:
        logpath("synthetic/{shape}/{evaluator}.log"),
    benchmark:
        res("benchmarks/synthetic_evaluate/{shape}/{evaluator}.tsv")
    wildcard_constraints:
        shape=alternatives(SYNTHETIC["shapes"]),
        evaluator=alternatives(SYNTHETIC["evaluators"]),
    params:
        synthetic=SYNTHETIC,
        family_params=lambda w: config["family_params"].get(w.evaluator, {}),
        seed=config["seed"],
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
    conda:
        CONDA_ENV
    script:
        "../scripts/collect.py"
