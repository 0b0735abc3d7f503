# GLM-4.5 on 128 B200 (16 nodes of 8), from Megatron-Bridge's public H100 recipe
# (src/megatron/bridge/recipes/glm/h100/glm45.py): TP2 PP8 EP16 ETP1, sequence parallel, MBS 1,
# GBS 2048, sequence 4096, selective recomputation, 10 layers on the first and last pipeline
# stages, one MTP layer. The paper's GLM-4.5 baseline (attune-paper.md §3).
# --padded-vocab-size pins the output layer (a multiple of 128 x 8), so that a change of
# tensor parallelism leaves the logits and parameters identical.
CUDA_DEVICE_MAX_CONNECTIONS=1
python pretrain_gpt.py \
  --tensor-model-parallel-size 2 \
  --pipeline-model-parallel-size 8 \
  --expert-model-parallel-size 16 \
  --expert-tensor-parallel-size 1 \
  --decoder-first-pipeline-num-layers 10 \
  --decoder-last-pipeline-num-layers 10 \
  --sequence-parallel \
  --micro-batch-size 1 \
  --global-batch-size 2048 \
  --seq-length 4096 \
  --mtp-num-layers 1 \
  --bf16 \
  --moe-token-dispatcher-type alltoall \
  --moe-grouped-gemm \
  --moe-permute-fusion \
  --moe-shared-expert-overlap \
  --recompute-granularity selective \
  --use-distributed-optimizer \
  --overlap-grad-reduce \
  --overlap-param-gather \
  --cross-entropy-loss-fusion \
  --padded-vocab-size 151552
