# Stage 7: the paper's conclusions checked on this run's tidy result files.


rule findings:
    input:
        scores=res("scores.parquet") if PSEUDO_REAL else [],
        calibrators=res("calibrators.parquet") if PSEUDO_REAL else [],
        synthetic=res("synthetic_scores.parquet") if SYNTHETIC["enabled"] else [],
    output:
        md=report(res("findings.md"), category="Findings"),
        csv=res("findings.csv"),
        environment=res("environment.json"),
        # what deciding the open claims would cost at this run's CPU: a timing,
        # kept out of findings.md / .csv (the same bytes on every run)
        cost=res("findings_cost.md"),
    log:
        logpath("report/findings.log"),
    benchmark:
        res("benchmarks/findings.tsv")
    params:
        exp=config["exp"],
        truth=config["truth"][0],
        ranked=EVAL["ranked_calibrators"],
        scope=config["report"]["scope"],
        # the finished jobs' benchmark files price what would decide a claim
        # (read when present, not inputs: the findings must not wait on them)
        results=lambda w, output: os.path.dirname(output.csv),
    conda:
        CONDA_ENV
    script:
        "../scripts/findings.py"
