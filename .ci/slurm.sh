#!/usr/bin/env bash
# The tiny workflow through a real SLURM cluster, as the README tells users to
# run it (section "Running on a SLURM cluster"). Needs root and apt; run from
# an environment where fitontest and snakemake-executor-plugin-slurm are
# installed (.ci/run does this when FITONTEST_CI_SLURM=1).
#
# One node (this machine, all its CPUs), munge and SLURM from Debian's
# packages, no cgroups, no accounting, daemons started here and stopped on
# exit by their process ids. Checks (set -e + explicit comparisons):
#   1. the tiny workflow finishes through workflow/profiles/slurm;
#   2. its tables are byte-identical to those of a local run;
#   3. in a second run (over a copy of the first, one evaluator's scores
#      deleted) the running evaluate job is cancelled with scancel; the run and
#      a rerun of the same command complete, nothing is left incomplete, and
#      the tables are again identical;
#   4. every heavy rule left a benchmark, and `fitontest jobs` reads them.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
[ "$(id -u)" = 0 ] || { echo "slurm.sh: needs root (installs and starts SLURM)" >&2; exit 1; }

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
fi

WORK=$(mktemp -d /tmp/fitontest-slurm.XXXXXX)
PIDS=()
WROTE_CONF=0
# the default place: the plugin's jobs clear SLURM_* variables (SLURM_CONF too)
# before calling srun inside their allocation
SLURM_CONF=/etc/slurm/slurm.conf
stop_daemons() {
  local rc=$?
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  [ "$WROTE_CONF" = 1 ] && rm -f "$SLURM_CONF"
  echo "slurm.sh: daemons stopped; state and logs in $WORK"
  exit $rc
}
trap stop_daemons EXIT

# --- munge, on a socket and key of its own --------------------------------
mkdir -p "$WORK/munge"
chmod 700 "$WORK/munge"
dd if=/dev/urandom of="$WORK/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$WORK/munge/munge.key"
SOCKET=$WORK/munge/munge.socket
munged --foreground --force --socket="$SOCKET" --key-file="$WORK/munge/munge.key" \
  --pid-file="$WORK/munge/munged.pid" --log-file="$WORK/munge/munged.log" \
  --seed-file="$WORK/munge/munged.seed" &
PIDS+=($!)

# --- slurm.conf for this one machine ----------------------------------------
HOST=$(hostname -s)
CPUS=$(nproc)
# a little below the total, or slurmd drains the node for "Low RealMemory"
MEM=$(free -m | awk '/^Mem:/ {print int($2 * 0.9)}')
mkdir -p "$WORK/state" "$WORK/spool" "$WORK/log"
if [ -e "$SLURM_CONF" ] && ! grep -q "^# fitontest .ci/slurm.sh" "$SLURM_CONF"; then
  echo "slurm.sh: $SLURM_CONF exists and is not ours: not touching this machine's SLURM" >&2
  exit 1
fi
mkdir -p "$(dirname "$SLURM_CONF")"
WROTE_CONF=1
cat > "$SLURM_CONF" <<EOF
# fitontest .ci/slurm.sh (removed when it stops)
ClusterName=fitontest
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCKET
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/spool
SlurmctldPidFile=$WORK/slurmctld.pid
SlurmdPidFile=$WORK/slurmd.pid
SlurmctldLogFile=$WORK/log/slurmctld.log
SlurmdLogFile=$WORK/log/slurmd.log
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEM State=UNKNOWN
PartitionName=main Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -D -f "$SLURM_CONF" &
PIDS+=($!)
slurmd -D -f "$SLURM_CONF" &
PIDS+=($!)

for _ in $(seq 60); do
  for pid in "${PIDS[@]}"; do
    kill -0 "$pid" 2>/dev/null || { echo "slurm.sh: a daemon died"; tail "$WORK"/log/*; exit 1; }
  done
  state=$(sinfo -h -o %T 2>/dev/null || true)
  [ "$state" = idle ] && break
  sleep 1
done
[ "$state" = idle ] || { echo "slurm.sh: node not idle: '$state'"; tail "$WORK"/log/*; exit 1; }
sinfo

# --- the tiny workflow -----------------------------------------------------
python - "$WORK/tiny.yaml" <<'EOF'
import sys
sys.path.insert(0, "tests")
import yaml
from test_workflow import tiny_config
cfg = tiny_config()
cfg["batch"] = {"evaluators": 1, "calibrators": 1}   # a job per method, as on a cluster
open(sys.argv[1], "w").write(yaml.safe_dump(cfg))
EOF

# The README's command; this cluster has no accounting (squeue status, no
# account) and is one partition (named here as a user names theirs).
slurm_run() {
  snakemake --workflow-profile workflow/profiles/slurm --directory "$1" \
    --default-resources slurm_partition=main \
    --slurm-status-command squeue --slurm-no-account \
    --slurm-init-seconds-before-status-checks 5 \
    --configfile "$WORK/tiny.yaml"
}
compare_tables() {
  # the tables byte for byte; the CD diagrams must exist in both (their
  # drawing is checked by the tests, and a PNG may differ in its encoder)
  diff -r -x '*.cd.png' -x '*.cd.pdf' "$WORK/local/results/tiny/tables" "$1/results/tiny/tables"
  diff <(cd "$WORK/local/results/tiny/tables" && ls ./*.cd.*) <(cd "$1/results/tiny/tables" && ls ./*.cd.*)
  echo "slurm.sh: tables of $1 identical to the local run's"
}
nothing_left() {
  [ -z "$(ls -A "$1/.snakemake/incomplete" 2>/dev/null)" ] \
    || { echo "slurm.sh: incomplete outputs left in $1"; exit 1; }
  snakemake --directory "$1" --configfile "$WORK/tiny.yaml" -n > "$1/dryrun.txt" 2>&1
  grep -q "Nothing to be done" "$1/dryrun.txt" \
    || { echo "slurm.sh: $1 is not complete:"; cat "$1/dryrun.txt"; exit 1; }
}

start=$SECONDS
slurm_run "$WORK/slurm" 2>&1 | tee "$WORK/slurm.log"
echo "slurm.sh: SLURM run took $((SECONDS - start)) s"
grep -q "is more than the largest SLURM node" "$WORK/slurm.log"

# The local run with the thread counts the SLURM jobs got (the profile's,
# capped at this node): torch and BLAS results depend on the thread count.
start=$SECONDS
snakemake --cores "$CPUS" --directory "$WORK/local" --configfile "$WORK/tiny.yaml" \
  --set-threads "train=$CPUS" "export_logits=$CPUS" "evaluate=$CPUS" \
  "synthetic_evaluate=$CPUS" "calibrate_binary=$CPUS" "calibrate_multiclass=$CPUS" \
  > "$WORK/local.log" 2>&1 || { tail -50 "$WORK/local.log"; exit 1; }
echo "slurm.sh: local run took $((SECONDS - start)) s"
compare_tables "$WORK/slurm"
nothing_left "$WORK/slurm"

fitontest jobs "$WORK/slurm/results/tiny" | tee "$WORK/jobstats.txt"
for rule in split train export_logits calibrate_multiclass calibrate_binary truth evaluate \
            synthetic_evaluate; do
  grep -q "^$rule " "$WORK/jobstats.txt" || { echo "slurm.sh: no benchmark of $rule"; exit 1; }
done

# --- a cancelled job ---------------------------------------------------------
# A second run over a copy of the first, with the isotonic evaluator's scores
# and what is made from them deleted: it redoes that evaluate job, the
# collection, the tables and the figures.
# That job is cancelled with scancel while it runs; the run (whose profile
# retries failed jobs) and a rerun of the same command must complete, with
# every output whole: tables identical, nothing incomplete, nothing to do.
cp -a "$WORK/slurm" "$WORK/cancel"
rm -rf "$WORK"/cancel/results/tiny/scores/*/isotonic.parquet \
  "$WORK"/cancel/results/tiny/{scores.parquet,tables,figures}
slurm_run "$WORK/cancel" > "$WORK/cancel.log" 2>&1 &
RUN=$!
victim=""
for _ in $(seq 300); do
  victim=$(squeue -h -t RUNNING -o "%i %k" | awk '$2 ~ /rule_evaluate_/ {print $1; exit}')
  [ -n "$victim" ] && break
  sleep 0.5
done
[ -n "$victim" ] || { echo "slurm.sh: no running evaluate job to cancel"; exit 1; }
sleep 3
scancel "$victim"
echo "slurm.sh: cancelled SLURM job $victim (evaluate)"
rc=0
wait "$RUN" || rc=$?
echo "slurm.sh: the run with the cancelled job exited with $rc"
grep -Eq "Error in rule evaluate" "$WORK/cancel.log" \
  || { echo "slurm.sh: the cancellation was not noticed"; tail -50 "$WORK/cancel.log"; exit 1; }
slurm_run "$WORK/cancel" > "$WORK/rerun.log" 2>&1 || { tail -50 "$WORK/rerun.log"; exit 1; }
compare_tables "$WORK/cancel"
nothing_left "$WORK/cancel"
echo "slurm.sh: all checks passed"
