#include "adapters/tuner/tpe_tuner.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "adapters/model/layout.h"
#include "adapters/model/performance_model.h"
#include "adapters/model/pipeline_split.h"
#include "adapters/tuner/black_box_space.h"

extern char** environ;

namespace attune {

extern const char kTpeBridgePy[];
extern const std::size_t kTpeBridgePy_size;

using nlohmann::json;

// The bridge process: started on first use, ended with the tuner.
class TpeBridge {
 public:
  static Result<std::unique_ptr<TpeBridge>> start(const std::string& python) {
    int to_child[2];
    int from_child[2];
    if (::pipe2(to_child, O_CLOEXEC) != 0) return make_error(std::strerror(errno));
    if (::pipe2(from_child, O_CLOEXEC) != 0) {
      ::close(to_child[0]);
      ::close(to_child[1]);
      return make_error(std::strerror(errno));
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, to_child[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, from_child[1], STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    const std::string script(kTpeBridgePy, kTpeBridgePy_size);
    std::vector<std::string> args = {python, "-u", "-c", script};
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    const int rc = ::posix_spawn(&pid, python.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(to_child[0]);
    ::close(from_child[1]);
    if (rc != 0) {
      ::close(to_child[1]);
      ::close(from_child[0]);
      return make_error("cannot start " + python + ": " + std::strerror(rc));
    }
    auto bridge = std::unique_ptr<TpeBridge>(new TpeBridge());
    bridge->pid_ = pid;
    bridge->in_ = to_child[1];
    bridge->out_ = from_child[0];
    return bridge;
  }

  ~TpeBridge() {
    ::close(in_);
    ::close(out_);
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, &status, 0);
    }
  }

  Result<json> call(const json& request) {
    const std::string line = request.dump() + "\n";
    std::size_t written = 0;
    while (written < line.size()) {
      const ssize_t n = ::write(in_, line.data() + written, line.size() - written);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        return make_error("the TPE bridge stopped reading (is python3-optuna installed?)");
      written += static_cast<std::size_t>(n);
    }
    std::string answer;
    for (;;) {
      const std::size_t newline = buffer_.find('\n');
      if (newline != std::string::npos) {
        answer = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        break;
      }
      char chunk[4096];
      const ssize_t n = ::read(out_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return make_error("the TPE bridge exited (is python3-optuna installed?)");
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
    json parsed = json::parse(answer, nullptr, false);
    if (parsed.is_discarded()) return make_error("the TPE bridge answered: " + answer);
    if (parsed.contains("error")) {
      return make_error("the TPE bridge failed: " + parsed["error"].get<std::string>());
    }
    return parsed;
  }

 private:
  TpeBridge() = default;
  pid_t pid_ = 0;
  int in_ = -1;
  int out_ = -1;
  std::string buffer_;
};

namespace {

// What the search has told TPE so far, and what it has proposed.
struct TpeHistory {
  json history = json::array();                 // in proposal order: the baseline first
  std::map<std::string, double> value_of_hash;  // recipe hash -> told value
  std::set<std::string> proposed;               // recipe hashes, the baseline's included
};

// The history from the ledger: the baseline, then every search proposal in the space, valued at
// its measured throughput, at zero where it was refused or failed, and null while it runs.
TpeHistory tpe_history(const sim::Workload& w, const sim::Layout& baseline_layout,
                       const json& space, const TunerView& view) {
  const ControlState& state = view.state;
  TpeHistory out;
  const double baseline_value = state.view.baseline_band.mean_tokens_per_s_per_gpu;
  const json baseline_params = params_of(w, baseline_layout, space);
  out.value_of_hash[recipe_hash(view.baseline)] = baseline_value;
  if (in_space(baseline_params, space)) {
    out.history.push_back({{"params", baseline_params}, {"value", baseline_value}});
  }
  std::map<ProposalId, const RunState*> run_of_proposal;
  for (const auto& [id, run] : state.runs) run_of_proposal[run.proposal_id] = &run;
  for (const auto& [id, proposal] : state.proposals) {
    if (proposal.purpose != RunPurpose::kSearch) continue;
    auto recipe = parse_recipe(proposal.recipe, "proposal");
    if (!recipe.ok()) continue;
    auto layout = sim::decode_layout(w, recipe.value());
    if (!layout.ok()) continue;
    const json params = params_of(w, layout.value(), space);
    if (!in_space(params, space)) continue;
    json value = nullptr;  // still running
    auto run = run_of_proposal.find(id);
    if (run == run_of_proposal.end()) {
      value = 0.0;  // refused: scored zero
    } else if (run->second->measured) {
      value = run->second->measured->tokens_per_sec_per_gpu;
    } else if (run->second->failed || run->second->charged) {
      value = 0.0;  // any failure scores zero
    }
    if (!value.is_null()) out.value_of_hash[proposal.recipe_hash] = value.get<double>();
    out.history.push_back({{"params", params}, {"value", value}});
  }
  for (const auto& [id, proposal] : state.proposals) out.proposed.insert(proposal.recipe_hash);
  out.proposed.insert(recipe_hash(view.baseline));
  return out;
}

}  // namespace

double memory_prefilter_margin(const sim::Workload& workload, const Recipe& baseline,
                               const ControlState& state) {
  const sim::Prediction p = sim::predict(workload, baseline);
  if (!p.valid || p.peak_memory_gib <= 0) return 0.0;
  double margin = 0.0;
  for (const auto& [id, run] : state.runs) {
    if (run.purpose != RunPurpose::kCalibration || !run.measured) continue;
    const std::vector<double>& peaks = run.measured->peak_memory_gib_by_stage;
    if (peaks.empty()) continue;
    const double observed = *std::max_element(peaks.begin(), peaks.end());
    margin = std::max(margin, observed / p.peak_memory_gib - 1.0);
  }
  return margin;
}

TpeTuner::TpeTuner(sim::Workload workload, std::uint64_t seed, std::string python,
                   bool memory_prefilter, std::vector<int> micro_batch_sizes)
    : workload_(std::move(workload)),
      seed_(seed),
      micro_batch_sizes_(std::move(micro_batch_sizes)),
      python_(std::move(python)),
      memory_prefilter_(memory_prefilter) {}

TpeTuner::~TpeTuner() = default;

Status TpeTuner::begin_search(const json& space, const json& history) {
  if (!bridge_) {
    auto started = TpeBridge::start(python_);
    if (!started.ok()) return make_error(started.error());
    bridge_ = std::move(started).value();
  }
  auto begun = bridge_->call({{"op", "begin"},
                              {"seed", seed_},
                              {"startup", kTpeStartupTrials},
                              {"space", space},
                              {"history", history}});
  if (!begun.ok()) {
    bridge_.reset();
    return make_error(begun.error());
  }
  return Ok{};
}

TunerAnswer TpeTuner::next(const TunerView& view) {
  const ControlState& state = view.state;
  auto stop = [](const std::string& why) {
    TunerStop s;
    s.evidence = why;
    s.last_diagnosis = "none (black-box search)";
    return s;
  };
  auto baseline_layout = sim::decode_layout(workload_, view.baseline);
  if (!baseline_layout.ok()) return stop("the baseline's layout: " + baseline_layout.error());
  const json space = search_space(workload_, baseline_layout.value(), micro_batch_sizes_);
  const double margin =
      memory_prefilter_ ? memory_prefilter_margin(workload_, view.baseline, state) : 0;
  // Feasible, and past the pre-filter where there is one.
  auto admitted = [&](const Recipe& candidate) {
    const sim::Prediction p = sim::predict(workload_, candidate);
    if (!p.valid) return false;
    return !memory_prefilter_ || p.peak_memory_gib * (1.0 + margin) <= p.memory_capacity_gib;
  };

  const TpeHistory past = tpe_history(workload_, baseline_layout.value(), space, view);

  if (Status begun = begin_search(space, past.history); !begun.ok()) return stop(begun.error());
  for (int draw = 0; draw < kTpeDrawsPerAnswerMax; ++draw) {
    auto asked = bridge_->call({{"op", "ask"}});
    if (!asked.ok()) {
      bridge_.reset();
      return stop(asked.error());
    }
    const json params = (*asked)["params"];
    double told = 0.0;  // infeasible: scored zero without a launch
    const std::optional<sim::Layout> drawn = layout_at(workload_, baseline_layout.value(), params);
    auto candidate = drawn ? sim::apply_layout(view.baseline, *drawn)
                           : Result<Recipe>(make_error("an unrealizable pipeline split"));
    if (candidate.ok()) {
      const std::string hash = recipe_hash(candidate.value());
      if (past.proposed.contains(hash)) {
        // A repeat: told what the ledger has for it (still running: what the liar would say).
        auto known = past.value_of_hash.find(hash);
        told = known != past.value_of_hash.end() ? known->second : 0.0;
      } else if (admitted(candidate.value())) {
        TunerProposal proposal;
        proposal.recipe = std::move(candidate).value();
        proposal.parent_run_id = 0;
        proposal.hypothesis.bottleneck = "unknown (black-box search)";
        proposal.hypothesis.mechanism = "TPE draw " + params.dump();
        proposal.hypothesis.expected_gain_fraction = 0.0;
        return proposal;
      }
    }
    auto result = bridge_->call({{"op", "tell"}, {"value", told}});
    if (!result.ok()) {
      bridge_.reset();
      return stop(result.error());
    }
  }
  // Nothing running can tell TPE more: the search has nowhere left to go.
  if (state.runs_in_flight() == 0) {
    return stop("TPE drew " + std::to_string(kTpeDrawsPerAnswerMax) +
                " configurations in a row and none could launch: each was infeasible, " +
                (memory_prefilter_ ? "predicted not to fit by the memory pre-filter, " : "") +
                "or already run");
  }
  return TunerWait{};
}

}  // namespace attune
