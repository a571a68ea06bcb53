#!/usr/bin/env bash
# The GPU checks in one run, on a machine whose python3 holds a CUDA build of torch (pitstop from src/):
# 1. `pytest -m gpu` over the GPU test files (the CUDA paths of bench, doctor, profile, train; the NCCL
#    ones that one GPU can run), in 4 workers (no test there times anything against another);
# 2. benchmarks/train_scripts.py --device cuda, alone on the GPU, on the manifest's three GPU scripts
#    (issue 45; each `cuda` block's `role`): nanoGPT (fp32 compute-bound: TF32 or bf16 should win), the
#    word-language-model Transformer (fp16 + GradScaler forced where bf16 exists: it clips its gradients,
#    so the edit must unscale first), gcommands LeNet (input-bound: loader workers should win); each the
#    patch against the original as whole processes, the patch's loss inside the seeds' band;
# 3. benchmarks/generate.py --device cuda on zoo:llama-tiny (the generation search against its hand grid).
# The scripts' files are never committed: before the run, here, `python benchmarks/scripts_corpus.py
# --collect /work/.mirror --only nanogpt word_lm_transformer gcommands_mfsc_lenet` (2.5 MB), and carry
# benchmarks/.corpus/scripts to the GPU machine. Logs and the benchmarks' JSON go to $OUT (else the
# current folder). Seconds for each part: PYTEST_S, NANOGPT_S, FP16_S, INPUT_S, GEN_S (defaults sum to
# 8 minutes).
set -u
out=${OUT:-.}
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
nvidia-smi -L; python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name())"
git --version; uptime
timeout "${PYTEST_S:-150}" python3 -m pytest -m gpu -p no:cacheprovider -v -rs -n 4 --timeout 145 \
  tests/bench/test_gpu.py tests/doctor/test_doctor_gpu.py tests/profile/test_profile_gpu.py \
  tests/profile/test_torchrun_nccl_gpu.py tests/train/test_train_gpu.py tests/train/test_train_gpu_math.py \
  tests/train/test_train_input.py tests/generate/test_generate_gpu.py 2>&1 | tee "$out/gpu-pytest.log"
uptime
timeout "${NANOGPT_S:-110}" python3 benchmarks/train_scripts.py --device cuda --only nanogpt \
  --budget-s "${BUDGET_S:-50}" --rounds 2 --seeds 2 --json "$out/gpu-nanogpt.json" 2>&1 | tee "$out/gpu-nanogpt.log"
uptime
timeout "${FP16_S:-80}" python3 benchmarks/train_scripts.py --device cuda --only word_lm_transformer \
  --budget-s 35 --rounds 2 --seeds 2 --json "$out/gpu-fp16.json" 2>&1 | tee "$out/gpu-fp16.log"
uptime
timeout "${INPUT_S:-70}" python3 benchmarks/train_scripts.py --device cuda --only gcommands_mfsc_lenet \
  --budget-s 30 --rounds 1 --seeds 2 --json "$out/gpu-input.json" 2>&1 | tee "$out/gpu-input.log"
uptime
timeout "${GEN_S:-70}" python3 benchmarks/generate.py zoo:llama-tiny --device cuda --search-s 40 --grid-s 20 \
  --json "$out/gpu-generate.json" 2>&1 | tee "$out/gpu-generate.log"
uptime
