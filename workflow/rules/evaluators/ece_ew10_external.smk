# Example external evaluator: equal-width ECE with 10 bins, computed by a
# stand-alone script that does not import fitontest (any language works: it
# only reads and writes the npz files of the contract in docs/guide/adding-an-evaluator.md).
# Enable it by listing "ece_ew10_external" under evaluation.external_evaluators.


rule ece_ew10_external:
    input:
        calibrated="results/{exp}/calibrated/{arch}/{task}/{calibrator}.npz",
        # the test subsets of this (network, task): keys size{n}_seed{r}
        subsets="results/{exp}/data/subsets/{arch}/{task}.npz",
    output:
        # the map at every hold-out score is large on a 1M hold-out: temporary,
        # deleted once scored
        temp("results/{exp}/external/{arch}/{task}/{calibrator}/ece_ew10_external.npz"),
    log:
        "logs/{exp}/external/{arch}/{task}/{calibrator}/ece_ew10_external.log",
    benchmark:
        "results/{exp}/benchmarks/ece_ew10_external/{arch}/{task}/{calibrator}.tsv"
    conda:
        "../../../envs/fitontest.yaml"
    script:
        "../../scripts/external/ece_ew10.py"
