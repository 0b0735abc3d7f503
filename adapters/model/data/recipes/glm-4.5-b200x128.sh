# GLM-4.5 on 128 B200 (16 nodes of 8), from Megatron-Bridge's public H100 recipe
# (src/megatron/bridge/recipes/glm/h100/glm45.py): TP2 PP8 EP16 ETP1, sequence parallel, MBS 1,
# GBS 2048, sequence 4096, selective recomputation, 10 layers on the first and last pipeline
# stages, one MTP layer. The paper's GLM-4.5 baseline (attune-paper.md §3).
# --padded-vocab-size pins the output layer (a multiple of 128 x 8), so that a change of
# tensor parallelism leaves the logits and parameters identical.
# Training settings, from the same recipe (NVIDIA-NeMo/Megatron-Bridge 067f987d): h100/glm45.py
# sets lr 1e-4, min lr 1e-5, 2000 warmup iterations, 1,000,000 training iterations, beta2 0.95 and
# eps 1e-8; recipes/utils/optimizer_utils.py gives cosine decay, clipping at 1.0 and a constant
# weight decay of 0.033 (its scheduler's value); models/glm/glm45_bridge.py gives the routing:
# sigmoid scores, expert bias at update rate 0, seq_aux_loss at 1e-3, MTP loss scaled by 0.3.
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
  --lr 1e-4 \
  --min-lr 1e-5 \
  --lr-warmup-iters 2000 \
  --lr-decay-style cosine \
  --lr-decay-iters 1000000 \
  --weight-decay 0.033 \
  --adam-beta1 0.9 \
  --adam-beta2 0.95 \
  --adam-eps 1e-8 \
  --clip-grad 1.0 \
  --moe-router-score-function sigmoid \
  --moe-router-enable-expert-bias \
  --moe-router-bias-update-rate 0 \
  --moe-router-load-balancing-type seq_aux_loss \
  --moe-aux-loss-coeff 1e-3 \
  --mtp-loss-scaling-factor 0.3 \
  --padded-vocab-size 151552
