// The text and JSON views of one prediction (prediction_output.h).
#include "tools/attune/prediction_output.h"

#include <iostream>

#include "projections/number_format.h"
#include "projections/text_table.h"
#include "tools/attune/cli.h"

namespace attune::cli {
namespace {

nlohmann::json phase_json(const sim::PhaseTimes& t) {
  return {{"gemm_s", t.gemm_s},
          {"attention_s", t.attention_s},
          {"elementwise_s", t.elementwise_s},
          {"tp_comm_s", t.tp_comm_s},
          {"cp_comm_s", t.cp_comm_s},
          {"ep_a2a_s", t.ep_a2a_s},
          {"tp_comm_hidden_s", t.tp_comm_hidden_s},
          {"cp_comm_hidden_s", t.cp_comm_hidden_s},
          {"ep_a2a_hidden_s", t.ep_a2a_hidden_s},
          {"host_s", t.host_s},
          {"total_s", t.total_s()}};
}

nlohmann::json breakdown_json(const sim::Breakdown& b) {
  return {{"compute_s", b.compute_s},     {"gemm_s", b.gemm_s},
          {"attention_s", b.attention_s}, {"elementwise_s", b.elementwise_s},
          {"tp_comm_s", b.tp_comm_s},     {"cp_comm_s", b.cp_comm_s},
          {"ep_a2a_s", b.ep_a2a_s},       {"pp_p2p_s", b.pp_p2p_s},
          {"dp_comm_s", b.dp_comm_s},     {"bubble_s", b.bubble_s},
          {"recompute_s", b.recompute_s}, {"optimizer_s", b.optimizer_s},
          {"host_s", b.host_s},           {"loop_s", b.loop_s}};
}

// One pipeline stage: its peak memory, layers and microbatch time, then the peak's parts on a
// second line, so that each fits kTerminalWidth.
std::string stage_lines(const sim::StageTiming& s) {
  const sim::StageMemory& m = s.memory;
  const std::string stage = "  stage " + std::to_string(s.pipeline_rank) + ": ";
  return stage + format_fixed(m.peak_gib, 1) + " GiB, " + std::to_string(s.decoder_layers) +
         " layers" + (s.mtp_layers ? " + " + std::to_string(s.mtp_layers) + " MTP" : "") +
         (s.embedding ? " +embedding" : "") + (s.loss ? " +loss" : "") + ", " +
         format_fixed(1000 * s.microbatch_s, 2) + " ms/microbatch\n" +
         std::string(stage.size(), ' ') + "weights " + format_fixed(m.weights_gib, 1) +
         ", gradients " + format_fixed(m.gradients_gib, 1) + ", optimizer " +
         format_fixed(m.optimizer_gib, 1) + ", activations " + format_fixed(m.activations_gib, 1) +
         ", transient " + format_fixed(m.transient_gib, 1);
}

}  // namespace

nlohmann::json prediction_json(const sim::Prediction& p) {
  nlohmann::json out = {{"valid", p.valid}, {"megatron_rules_commit", sim::kMegatronRulesCommit}};
  if (!p.valid) {
    out["error"] = p.error;
    return out;
  }
  out["layout"] = p.layout;
  out["data_parallel_size"] = p.dp;
  out["expert_data_parallel_size"] = p.edp;
  out["virtual_stages"] = p.vp;
  out["microbatches"] = p.microbatches;
  out["step_time_s"] = p.step_time_s;
  out["tokens_per_s_per_gpu"] = p.tokens_per_s_per_gpu;
  out["mfu"] = p.mfu;
  out["megatron_tflops_per_gpu"] = p.megatron_tflops_per_gpu;
  out["fits_in_memory"] = p.fits_in_memory;
  out["peak_memory_gib"] = p.peak_memory_gib;
  out["memory_capacity_gib"] = p.memory_capacity_gib;
  out["peak_memory_gib_by_stage"] = p.peak_memory_gib_by_stage;
  out["breakdown"] = breakdown_json(p.breakdown);
  out["critical_stage"] = p.critical_stage;
  out["notes"] = p.notes;
  nlohmann::json stages = nlohmann::json::array();
  for (const sim::StageTiming& s : p.stages) {
    const sim::StageMemory& m = s.memory;
    stages.push_back({{"pipeline_rank", s.pipeline_rank},
                      {"decoder_layers", s.decoder_layers},
                      {"mtp_layers", s.mtp_layers},
                      {"embedding", s.embedding},
                      {"loss", s.loss},
                      {"forward", phase_json(s.forward)},
                      {"backward", phase_json(s.backward)},
                      {"recompute", phase_json(s.recompute)},
                      {"pp_p2p_s", s.pp_p2p_s},
                      {"microbatch_s", s.microbatch_s},
                      {"dp_comm_s", s.dp_comm_s},
                      {"dp_comm_hidden_s", s.dp_comm_hidden_s},
                      {"optimizer_s", s.optimizer_s},
                      {"memory_gib",
                       {{"weights", m.weights_gib},
                        {"gradients", m.gradients_gib},
                        {"optimizer", m.optimizer_gib},
                        {"activations", m.activations_gib},
                        {"transient", m.transient_gib},
                        {"reserved", m.reserved_gib},
                        {"peak", m.peak_gib}}}});
  }
  out["stages"] = stages;
  return out;
}

std::string workload_line(const sim::Workload& w) {
  return w.model.name + " on " + std::to_string(w.gpus) + " x " + w.hardware.name + ", seq " +
         std::to_string(w.seq_length) + ", global batch " + std::to_string(w.global_batch_size) +
         ", " + std::string(sim::precision_name(w.precision));
}

void print_prediction(const sim::Prediction& p) {
  const sim::Breakdown& b = p.breakdown;
  const std::string indent(13, ' ');
  std::cout << wrap_words("layout       " + p.layout + " (" + std::to_string(p.microbatches) +
                              " microbatches)",
                          kTerminalWidth, indent)
            << "\n";
  for (const std::string& note : p.notes) {
    std::cout << wrap_words("note         " + note, kTerminalWidth, indent) << "\n";
  }
  std::cout << "step time    " << format_fixed(p.step_time_s, 3) << " s\n";
  std::cout << "throughput   " << format_fixed(p.tokens_per_s_per_gpu, 1) << " tokens/s/GPU, MFU "
            << format_fixed(100 * p.mfu, 1) << "%, Megatron "
            << format_fixed(p.megatron_tflops_per_gpu, 1) << " TFLOP/s/GPU\n";
  std::cout << "memory       peak " << format_fixed(p.peak_memory_gib, 1) << " GiB of "
            << format_fixed(p.memory_capacity_gib, 1)
            << " GiB: " << (p.fits_in_memory ? "fits" : "OUT OF MEMORY") << "\n";
  for (const sim::StageTiming& s : p.stages) std::cout << stage_lines(s) << "\n";
  auto line = [&](const char* name, double seconds) {
    std::cout << "  " << name << std::string(14 - std::string(name).size(), ' ')
              << format_fixed(seconds, 3) << " s  "
              << format_fixed(100 * seconds / p.step_time_s, 1) << "%\n";
  };
  std::cout << "breakdown    (critical stage " << p.critical_stage << ", seconds per step)\n";
  line("compute", b.compute_s);
  line(" gemm", b.gemm_s);
  line(" attention", b.attention_s);
  line(" elementwise", b.elementwise_s);
  line("tp comm", b.tp_comm_s);
  line("cp comm", b.cp_comm_s);
  line("ep all-to-all", b.ep_a2a_s);
  line("pp send/recv", b.pp_p2p_s);
  line("dp comm", b.dp_comm_s);
  line("bubble", b.bubble_s);
  line("recompute", b.recompute_s);
  line("optimizer", b.optimizer_s);
  line("host", b.host_s);
  if (b.loop_s > 0) line("stack's loop", b.loop_s);
}

}  // namespace attune::cli
