# Stage 4: the "true" calibration map of every calibrated model on the hold-out.
# A job covers every calibrator of a (network, task), or with batch.calibrators
# > 1 of every task of a network (common.smk, TRUTH_JOB): one file each.


rule truth:
    input:
        truth_files("calibrated/{arch}/{task}/{calibrator}.npz"),
    output:
        truth_files("truth/{arch}/{task}/{calibrator}.npz"),
    log:
        logpath(f"truth/{TRUTH_JOB}.log"),
    benchmark:
        res(f"benchmarks/truth/{TRUTH_JOB}.tsv")
    params:
        truths=config["truth"],
    priority: PRIORITY["truth"]
    resources:
        mem_mb=8000,
    conda:
        CONDA_ENV
    script:
        "../scripts/truth.py"
