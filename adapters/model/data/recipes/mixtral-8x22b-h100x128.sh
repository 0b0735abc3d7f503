# Mixtral-8x22B on 128 H100 (16 nodes of 8), the expert-tuned recipe of Megatron-MoE-ModelZoo
# (best_practice/mixtral/run_mixtral_8x22B.sh with runtime.conf; perf_model.md §3a): TP2 PP8 VP7
# EP8, sequence parallel, MBS 1, GBS 256, sequence 4096, alltoall dispatcher, grouped GEMM.
# The paper's Mixtral-8x22B baseline (attune-paper.md §3).
# --padded-vocab-size pins the output layer (a multiple of 128 x 8), so that a change of
# tensor parallelism leaves the logits and parameters identical.
CUDA_DEVICE_MAX_CONNECTIONS=1
python pretrain_gpt.py \
  --tensor-model-parallel-size 2 \
  --pipeline-model-parallel-size 8 \
  --num-virtual-stages-per-pipeline-rank 7 \
  --expert-model-parallel-size 8 \
  --expert-tensor-parallel-size 1 \
  --sequence-parallel \
  --micro-batch-size 1 \
  --global-batch-size 256 \
  --seq-length 4096 \
  --bf16 \
  --moe-token-dispatcher-type alltoall \
  --moe-grouped-gemm \
  --moe-permute-fusion \
  --use-distributed-optimizer \
  --overlap-grad-reduce \
  --overlap-param-gather \
  --cross-entropy-loss-fusion \
  --padded-vocab-size 32768
