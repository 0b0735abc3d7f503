# Mixtral-8x22B on 128 H100 (16 nodes of 8), the expert-tuned recipe of Megatron-MoE-ModelZoo
# (best_practice/mixtral/run_mixtral_8x22B.sh with runtime.conf; perf_model.md §3a): TP2 PP8 VP7
# EP8, sequence parallel, MBS 1, GBS 256, sequence 4096, alltoall dispatcher, grouped GEMM.
# The paper's Mixtral-8x22B baseline (attune-paper.md §3).
# --padded-vocab-size pins the output layer (a multiple of 128 x 8), so that a change of
# tensor parallelism leaves the logits and parameters identical.
# Training settings, from the ModelZoo's model_configs/benchmarking/Mixtral-8x22B.yaml
# (yanring/Megatron-MoE-ModelZoo e8650517): lr 1.2e-5 to 1.2e-6 by cosine over 255,126,953
# samples after 162,761 warmup samples, weight decay 0.1, clipping at 1.0, betas 0.9/0.95,
# init std 0.008, top-2 routing with aux_loss at 1e-2. The samples are given here as iterations at
# its global batch of 256 (636 and 996,590), because a run of a set number of iterations
# (--train-iters) must schedule its learning rate in iterations.
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
  --lr 1.2e-5 \
  --min-lr 1.2e-6 \
  --lr-warmup-iters 636 \
  --lr-decay-iters 996590 \
  --lr-decay-style cosine \
  --weight-decay 0.1 \
  --adam-beta1 0.9 \
  --adam-beta2 0.95 \
  --clip-grad 1.0 \
  --init-method-std 0.008 \
  --moe-router-topk 2 \
  --moe-router-load-balancing-type aux_loss \
  --moe-aux-loss-coeff 1e-2 \
  --padded-vocab-size 32768
