"""Study layer: binary tasks, true-map estimation, the pseudo-real and synthetic
evaluation grids, config checks, the scores' schema, and cluster/job helpers
used by the workflow."""
