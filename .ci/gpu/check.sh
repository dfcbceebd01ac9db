#!/bin/bash
# The device check of a session that is lent a GPU machine (never CI: CI has no GPU). One call:
#   run(command="bash .ci/gpu/check.sh", timeout_s=595)
# Its output lands in $OUT: env.txt (versions, devices, smoke: default device, an MLP moved to
# cuda eager and compiled, bitwise run to run, vs PyTorch CUDA), bench.txt (the benchmarks with
# --device cuda, each module time-boxed), tests.txt (the suite, funcgrad's default device: the
# CPU, so it checks the suite under that machine's jax; stopped by SIGINT at $TT seconds).
# The machine's PyTorch is not the 2.13 oracle: the tests see none (a stub raising
# ModuleNotFoundError, which pytest.importorskip skips on; an ImportError would fail them).
# PARTS picks what runs (default all): e.g. two warm calls, PARTS=tests TT=420 then
# PARTS="smoke bench" (a call may run 600 s at most).
set -u
PARTS=${PARTS:-smoke bench tests}
has() { [[ " $PARTS " == *" $1 "* ]]; }
T0=$(date +%s)
el() { echo "[t=$(( $(date +%s) - T0 ))s] $*"; }
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONPATH=$PWD
{ el env; nvidia-smi -L; nproc; python3 -c 'import sys,jax,jaxlib,optax,numpy,torch;print(sys.version);print("jax",jax.__version__,"jaxlib",jaxlib.__version__,"optax",optax.__version__,"numpy",numpy.__version__,"torch",torch.__version__);print(jax.devices())'; } > $OUT/env.txt 2>&1
if has smoke; then
el smoke >> $OUT/env.txt
timeout 70 python3 .ci/gpu/smoke.py >> $OUT/env.txt 2>&1; echo "smoke rc=$?" >> $OUT/env.txt
el probe >> $OUT/env.txt
timeout 90 python3 .ci/gpu/probe.py cuda >> $OUT/env.txt 2>&1; echo "probe rc=$?" >> $OUT/env.txt
fi
if has bench; then
el bench > $OUT/bench.txt
for mt in core:70 train:35 jit:90; do m=${mt%%:*}; t=${mt##*:}
  timeout -s INT -k 10 $t python3 -m funcgrad.bench --only $m --device cuda >> $OUT/bench.txt 2>&1
  echo "[$m rc=$? limit ${t}s]" >> $OUT/bench.txt
done
fi
has tests || exit 0
mkdir -p /tmp/notorch && echo 'raise ModuleNotFoundError("torch hidden: the oracle is 2.13.0+cpu", name="torch")' > /tmp/notorch/torch.py
el tests > $OUT/tests.txt
PYTHONPATH=$PWD:/tmp/notorch timeout -s INT -k 30 ${TT:-200} python3 -m pytest tests funcgrad -q -n 14 --dist worksteal \
  -p no:cacheprovider -rfE --maxfail=600 --durations=25 --ignore=tests/test_notebooks.py >> $OUT/tests.txt 2>&1
echo "pytest rc=$?" >> $OUT/tests.txt
el end >> $OUT/tests.txt
