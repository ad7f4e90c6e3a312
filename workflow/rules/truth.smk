# Stage 4: the "true" calibration map of every calibrated model on the hold-out.


rule truth:
    input:
        per_calibrator("calibrated/{arch}/{task}/{calibrator}.npz", CALIBRATORS),
    output:
        per_calibrator("truth/{arch}/{task}/{calibrator}.npz", CALIBRATORS),
    log:
        logpath("truth/{arch}/{task}.log"),
    benchmark:
        res("benchmarks/truth/{arch}/{task}.tsv")
    params:
        truths=config["truth"],
    resources:
        mem_mb=8000,
    conda:
        CONDA_ENV
    script:
        "../scripts/truth.py"
