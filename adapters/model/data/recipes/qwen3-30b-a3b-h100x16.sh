# Qwen3-30B-A3B on 16 H100 (2 nodes of 8): a small, fast workload for demos and tests.
# TP2 EP8 ETP1, sequence parallel, MBS 1, GBS 256, sequence 4096.
# --padded-vocab-size pins the output layer (a multiple of 128 x 8), so that a change of
# tensor parallelism leaves the logits and parameters identical.
CUDA_DEVICE_MAX_CONNECTIONS=1
python pretrain_gpt.py \
  --tensor-model-parallel-size 2 \
  --pipeline-model-parallel-size 1 \
  --expert-model-parallel-size 8 \
  --expert-tensor-parallel-size 1 \
  --sequence-parallel \
  --micro-batch-size 1 \
  --global-batch-size 256 \
  --seq-length 4096 \
  --bf16 \
  --moe-token-dispatcher-type alltoall \
  --moe-grouped-gemm \
  --recompute-granularity selective \
  --use-distributed-optimizer \
  --overlap-grad-reduce \
  --overlap-param-gather \
  --padded-vocab-size 152576
