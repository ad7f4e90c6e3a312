"""Rule import_logits: one model's validation and test logits from its file, checked;
how the file was read (probabilities, guessed array names, split) is said once here."""
import numpy as np

from fitontest.core.io import save_npz, script_logger
from fitontest.data import logits

log = script_logger(snakemake.log[0])
f = logits.read_model(snakemake.params.data, snakemake.wildcards.arch)
for note in f.notes:
    log.info("%s: %s", snakemake.wildcards.arch, note)
for part, out in (("val", snakemake.output.val), ("test", snakemake.output.holdout)):
    z, y = f.data[part]
    # the layout of export_logits: the test set plays the hold-out
    save_npz(out, logits=z.astype(np.float32), labels=y, indices=np.arange(len(y)))
    log.info("%s: %d x %d logits, accuracy %.4f", part, *z.shape, float((z.argmax(1) == y).mean()))
