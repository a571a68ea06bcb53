#!/usr/bin/env bash
# The GPU checks in one run, on a machine whose python3 holds a CUDA build of torch (pitstop from src/):
# 1. `pytest -m gpu` over the GPU test files (the CUDA paths of bench, doctor, profile, train; the NCCL
#    ones that one GPU can run), in 4 workers (no test there times anything against another);
# 2. benchmarks/train_scripts.py --device cuda on nanoGPT (the manifest's `cuda` block), alone on the GPU;
# 3. benchmarks/generate.py --device cuda on zoo:llama-tiny (the generation search against its hand grid).
# Logs and the benchmarks' JSON go to $OUT (else the current folder). Seconds for each part: PYTEST_S,
# BENCH_S, GEN_S (defaults sum to 8 minutes).
set -u
out=${OUT:-.}
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
nvidia-smi -L; python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name())"
git --version; uptime
timeout "${PYTEST_S:-200}" python3 -m pytest -m gpu -p no:cacheprovider -v -rs -n 4 --timeout 190 \
  tests/bench/test_gpu.py tests/doctor/test_doctor_gpu.py tests/profile/test_profile_gpu.py \
  tests/profile/test_torchrun_nccl_gpu.py tests/train/test_train_gpu.py tests/train/test_train_gpu_math.py \
  tests/train/test_train_input.py tests/generate/test_generate_gpu.py 2>&1 | tee "$out/gpu-pytest.log"
uptime
timeout "${BENCH_S:-170}" python3 benchmarks/train_scripts.py --device cuda --only nanogpt --techniques \
  "${TECHNIQUES:-precision,tf32,optimizer,zero_grad}" --budget-s "${BUDGET_S:-80}" --rounds 2 --seeds 2 \
  --json "$out/gpu-nanogpt.json" 2>&1 | tee "$out/gpu-nanogpt.log"
uptime
timeout "${GEN_S:-110}" python3 benchmarks/generate.py zoo:llama-tiny --device cuda --search-s 60 --grid-s 35 \
  --json "$out/gpu-generate.json" 2>&1 | tee "$out/gpu-generate.log"
uptime
