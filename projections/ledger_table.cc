#include "projections/ledger_table.h"

#include <algorithm>
#include <type_traits>
#include <utility>

namespace attune {

namespace {

constexpr const char* kArrow = "\xE2\x86\x92";  // U+2192 RIGHTWARDS ARROW, UTF-8

void admit(LedgerTable& state, const LaunchAdmitted& admitted, std::uint64_t sequence) {
  if (state.rows.contains(admitted.run_id)) return;
  LedgerRow row;
  row.run_id = admitted.run_id;
  row.proposal_id = admitted.proposal_id;
  row.purpose = admitted.purpose;
  row.gpus = admitted.gpus;
  row.expected_gpu_hours = admitted.expected_gpu_hours;
  row.admitted_sequence = sequence;
  row.diff_summary = "(proposal " + std::to_string(admitted.proposal_id) + " unknown)";
  if (auto it = state.pending.find(admitted.proposal_id); it != state.pending.end()) {
    CandidateProposed& proposal = it->second;
    row.diff_summary = diff_summary_of(proposal.diff);
    row.objective_classes = objective_classes_of(proposal.diff);
    row.recipe = std::move(proposal.recipe);
    row.recipe_hash = std::move(proposal.recipe_hash);
    row.diff = std::move(proposal.diff);
    row.levers = std::move(proposal.levers);
    row.hypothesis = std::move(proposal.hypothesis);
    row.profile = proposal.profile;
    row.retry_of_run_id = proposal.retry_of_run_id;
    row.check_of_run_id = proposal.check_of_run_id;
    row.parent_run_id = proposal.parent_run_id;
    state.pending.erase(it);
  }
  if (row.retry_of_run_id != 0) {
    if (const auto it = state.rows.find(row.retry_of_run_id);
        it != state.rows.end() && it->second.retried_by_run_id == 0) {
      it->second.retried_by_run_id = row.run_id;
    }
  }
  state.rows.emplace(row.run_id, std::move(row));
}

void refuse(LedgerTable& state, const LaunchRefused& refused, std::uint64_t sequence) {
  RefusedProposal entry{sequence, refused.proposal_id, refused.reason, refused.detail, ""};
  if (const auto it = state.pending.find(refused.proposal_id); it != state.pending.end()) {
    entry.diff_summary = diff_summary_of(it->second.diff);
    state.pending.erase(it);
  }
  state.refused.push_back(std::move(entry));
}

// The verdicts the last event decided, onto their rows.
void copy_verdicts(LedgerTable& state, const Leader& leader) {
  for (const RunId run_id : leader.decided_by_last_event) {
    const RunVerdict& verdict = leader.verdicts.at(run_id);
    if (const auto it = state.rows.find(run_id); it != state.rows.end()) {
      it->second.verdict = verdict.verdict;
      it->second.gain_fraction = verdict.gain_fraction;
    }
  }
}

LedgerRow* row_of(LedgerTable& state, RunId run_id) {
  const auto it = state.rows.find(run_id);
  return it == state.rows.end() ? nullptr : &it->second;
}

// Every body but a proposal.
template <typename T>
void apply(LedgerTable& state, const T& body, std::uint64_t sequence) {
  if constexpr (std::is_same_v<T, LaunchAdmitted>) {
    admit(state, body, sequence);
  } else if constexpr (std::is_same_v<T, LaunchRefused>) {
    refuse(state, body, sequence);
  } else if constexpr (std::is_same_v<T, JobStarted>) {
    if (LedgerRow* row = row_of(state, body.run_id)) {
      row->admitted_at_unix_ns = body.admitted_at_unix_ns;
      row->nodes = body.nodes;
    }
  } else if constexpr (std::is_same_v<T, JobFinished>) {
    if (LedgerRow* row = row_of(state, body.run_id)) {
      row->released_at_unix_ns = body.released_at_unix_ns;
    }
  } else if constexpr (std::is_same_v<T, RunMeasured>) {
    if (LedgerRow* row = row_of(state, body.run_id); row && !row->tokens_per_s_per_gpu) {
      row->tokens_per_s_per_gpu = body.tokens_per_sec_per_gpu;
    }
  } else if constexpr (std::is_same_v<T, RunFailed>) {
    if (LedgerRow* row = row_of(state, body.run_id); row && !row->failure_class) {
      row->failure_class = body.failure_class;
      row->failure_message = body.message;
      row->failure_cause = body.cause;
    }
  } else if constexpr (std::is_same_v<T, Charged>) {
    if (LedgerRow* row = row_of(state, body.run_id)) {
      ++row->charge_count;
      row->gpu_hours_charged += std::max(0.0, body.gpu_hours);
      if (!row->account) row->account = body.account;
    }
  }
}

}  // namespace

LedgerTable initial_ledger_table() { return LedgerTable{}; }

void evolve(LedgerTable& state, const Envelope& event, const Leader& leader) {
  std::visit(
      [&](const auto& body) {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, CandidateProposed>) {
          state.pending.emplace(body.proposal_id, body);
        } else {
          apply(state, body, event.sequence);
        }
      },
      event.body);
  copy_verdicts(state, leader);
}

void evolve(LedgerTable& state, Envelope&& event, const Leader& leader) {
  if (auto* proposal = std::get_if<CandidateProposed>(&event.body)) {
    state.pending.emplace(proposal->proposal_id, std::move(*proposal));
    return;
  }
  evolve(state, std::as_const(event), leader);
}

std::string side_text(bool present, const std::string& value) {
  if (!present) return "(none)";
  if (value.empty()) return "(set)";
  return value;
}

std::string diff_summary_of(std::span<const SettingChange> diff) {
  if (diff.empty()) return "baseline";
  std::string summary;
  for (const SettingChange& change : diff) {
    if (!summary.empty()) summary += "; ";
    summary += change.name;
    summary += ' ';
    summary += side_text(change.before_present, change.before);
    summary += kArrow;
    summary += side_text(change.after_present, change.after);
  }
  return summary;
}

std::vector<ObjectiveClass> objective_classes_of(std::span<const SettingChange> diff) {
  std::vector<ObjectiveClass> classes;
  for (const SettingChange& change : diff) {
    if (std::find(classes.begin(), classes.end(), change.objective_class) == classes.end()) {
      classes.push_back(change.objective_class);
    }
  }
  return classes;
}

}  // namespace attune
