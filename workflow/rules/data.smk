# Stage 1: which images form train / validation / hold-out, and the test subsets.


rule split:
    output:
        split=res("data/split.json"),
        subsets=res("data/subsets.npz"),
    log:
        logpath("data/split.log"),
    benchmark:
        res("benchmarks/split.tsv")
    params:
        data=data_params(),
        sizes=EVAL["sizes"],
        seeds=EVAL["seeds"],
    resources:
        mem_mb=4000,
    conda:
        CONDA_ENV
    script:
        "../scripts/split.py"
