// One multiplier per cost term of the performance and memory model, all 1.0 for the clean model.
// The simulated world scales each term by hidden factors drawn from its reality seed; every term
// of a Prediction's breakdown passes through its factor before overlaps and maxima are taken, so a
// factor changes what is exposed as a real slowdown would.
#pragma once

namespace attune::sim {

struct CostFactors {
  double gemm = 1.0;         // dense and grouped GEMMs
  double attention = 1.0;    // flash attention (core attention) kernels
  double elementwise = 1.0;  // memory-bound kernels: norms, activations, permutes, casts, loss
  double tp_comm = 1.0;      // tensor-parallel all-gather / reduce-scatter / all-reduce
  double cp_comm = 1.0;      // context-parallel key/value exchange
  double ep_a2a = 1.0;       // expert dispatch and combine
  double pp_p2p = 1.0;       // pipeline send/receive
  double dp_comm = 1.0;      // data-parallel gradient reduce and parameter gather
  double optimizer = 1.0;    // optimizer step on GPU and CPU, and its host copies
  double recompute = 1.0;    // forward work repeated for activation recomputation
  double host = 1.0;         // CPU time to launch kernels, and synchronisation gaps
  double memory = 1.0;       // activation and workspace memory (not weights or optimizer state)
};

}  // namespace attune::sim
