# Llama-3.1-405B on 128 B200 (16 nodes of 8), FP8, from the Megatron-Bridge 25.11 benchmark
# recipe (perf_model.md §3b): TP4 PP8 CP2 VP8, sequence 8192, MBS 1, GBS 64; embedding and loss
# count as pipeline layers (126 + 2 layers over 8 x 8 chunks). The paper's Llama-3.1-405B
# baseline (attune-paper.md §3).
# --padded-vocab-size pins the output layer (a multiple of 128 x 8), so that a change of
# tensor parallelism leaves the logits and parameters identical.
# Training settings, from Megatron-Bridge's Llama-3.1-405B pretraining recipe (067f987d):
# recipes/common.py gives lr 3e-4 to 3e-5; h100/llama3.py 2000 warmup iterations and 1,168,251
# training iterations; recipes/utils/optimizer_utils.py cosine decay, betas 0.9/0.95, eps 1e-8,
# clipping at 1.0 and a constant weight decay of 0.033.
# Gradients are reduced in BF16: the benchmark recipe's precision settings set
# grad_reduce_in_fp32=False (perf_recipes/_common.py, _perf_precision; the 25.11 row's
# ddp.grad_reduce_in_fp32=False), which Megatron-LM spells --grad-reduce-in-bf16.
CUDA_DEVICE_MAX_CONNECTIONS=1
python pretrain_gpt.py \
  --tensor-model-parallel-size 4 \
  --pipeline-model-parallel-size 8 \
  --context-parallel-size 2 \
  --num-virtual-stages-per-pipeline-rank 8 \
  --account-for-embedding-in-pipeline-split \
  --account-for-loss-in-pipeline-split \
  --sequence-parallel \
  --tp-comm-overlap \
  --micro-batch-size 1 \
  --global-batch-size 64 \
  --seq-length 8192 \
  --bf16 \
  --fp8-format hybrid \
  --fp8-recipe tensorwise \
  --use-distributed-optimizer \
  --overlap-grad-reduce \
  --grad-reduce-in-bf16 \
  --overlap-param-gather \
  --cross-entropy-loss-fusion \
  --lr 3e-4 \
  --min-lr 3e-5 \
  --lr-warmup-iters 2000 \
  --lr-decay-style cosine \
  --lr-decay-iters 1168251 \
  --weight-decay 0.033 \
  --adam-beta1 0.9 \
  --adam-beta2 0.95 \
  --adam-eps 1e-8 \
  --clip-grad 1.0 \
  --padded-vocab-size 129024
