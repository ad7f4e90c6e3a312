# Stage 1: which images form train / validation / hold-out, and the test subsets.


rule split:
    output:
        split=res("data/split.json"),
        # one file per (network, task): the same key layout as before, so an
        # external evaluator reads the file of its (network, task)
        subsets=expand(res("data/subsets/{arch}/{task}.npz"), arch=NETWORKS, task=TASKS,
                       allow_missing=True),
    log:
        logpath("data/split.log"),
    benchmark:
        res("benchmarks/split.tsv")
    params:
        data=data_params(),
        sizes=EVAL["sizes"],
        seeds=EVAL["seeds"],
        design=EVAL["subsets"],
        units=[(a, t) for a in NETWORKS for t in TASKS],
    resources:
        mem_mb=4000,
    conda:
        CONDA_ENV
    script:
        "../scripts/split.py"
