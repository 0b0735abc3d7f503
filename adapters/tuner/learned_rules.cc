#include "adapters/tuner/learned_rules.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "events/recipe.h"
#include "gate/config_check.h"
#include "projections/number_format.h"

namespace attune {
namespace {

using nlohmann::json;

// The bottleneck a hypothesis named by its tag; none for a tuner that names no tag.
std::optional<Bottleneck> bottleneck_of(const Hypothesis& hypothesis) {
  return bottleneck_of_tag(hypothesis.bottleneck_tag);
}

// The lever a proposal names: the expert's "lever: mechanism", else its one lever group.
std::string lever_of(const CandidateProposed& proposal) {
  const std::string& mechanism = proposal.hypothesis.mechanism;
  const std::size_t colon = mechanism.find(": ");
  if (colon != std::string::npos && mechanism.find(' ') > colon) return mechanism.substr(0, colon);
  return proposal.levers.size() == 1 ? proposal.levers.front().name : "";
}

std::string action_words(const ControlState& state, const CandidateProposed& proposal) {
  const RunState* parent = state.run(proposal.parent_run_id);
  auto from = parse_recipe(parent != nullptr ? parent->recipe : state.view.settings.baseline_recipe,
                           "parent");
  auto to = parse_recipe(proposal.recipe, "candidate");
  if (!from.ok() || !to.ok()) return "";
  return change_words(from.value(), to.value());
}

double measured_or_baseline(const ControlState& state, RunId run_id) {
  if (run_id == 0) return state.view.baseline_band.mean_tokens_per_s_per_gpu;
  const RunState* run = state.run(run_id);
  return run != nullptr && run->measured ? run->measured->tokens_per_sec_per_gpu : 0.0;
}

}  // namespace

std::string change_words(const Recipe& from, const Recipe& to) {
  std::string out;
  for (const SettingChange& change : effective_changes(from, to)) {
    // A parallel degree or a layer count is a figure: such a change has no words.
    if (change.after_present && change.after.find_first_of("0123456789") != std::string::npos) {
      return "";
    }
    std::string words = change.name;
    if (!change.after_present) {
      words += " removed";
    } else if (change.after.empty()) {
      words += " set";
    } else {
      words += " set to " + change.after;
    }
    out += (out.empty() ? "" : ", ") + words;
  }
  return out;
}

Result<std::vector<LearnedRule>> parse_learned_rules(std::string_view text,
                                                     std::string_view source_name,
                                                     std::string* torn_tail) {
  std::vector<LearnedRule> rules;
  std::istringstream lines{std::string(text)};
  std::string line;
  int number = 0;
  const bool ends_torn = !text.empty() && text.back() != '\n';
  while (std::getline(lines, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = std::string(source_name) + ":" + std::to_string(number);
    json value = json::parse(line, nullptr, false);
    if (value.is_discarded() || !value.is_object()) {
      if (ends_torn && lines.peek() == std::char_traits<char>::eof()) {
        if (torn_tail != nullptr) {
          *torn_tail = where + ": a torn last line (an append that did not finish) was skipped";
        }
        break;
      }
      return make_error(where + ": expected a JSON object per line");
    }
    LearnedRule rule;
    for (const char* key : {"lever", "when", "effect", "rule"}) {
      if (!value.contains(key) || !value[key].is_string() ||
          value[key].get<std::string>().empty()) {
        return make_error(where + ": expected a non-empty string '" + key + "'");
      }
    }
    rule.lever = value["lever"].get<std::string>();
    rule.when = value["when"].get<std::string>();
    rule.effect = value["effect"].get<std::string>();
    rule.rule = value["rule"].get<std::string>();
    if (value.contains("action") && value["action"].is_string()) {
      rule.action = value["action"].get<std::string>();
    }
    if (value.contains("source") && value["source"].is_string()) {
      rule.source = value["source"].get<std::string>();
    }
    if (rule.effect != "helped" && rule.effect != "hurt") {
      return make_error(where + ": 'effect' must be \"helped\" or \"hurt\"");
    }
    rules.push_back(std::move(rule));
  }
  return rules;
}

std::vector<LearnedRule> rules_for_launcher(std::vector<LearnedRule> rules,
                                            const std::string& launcher, bool simulated_rules) {
  if (launcher == "sim" || simulated_rules) return rules;
  std::erase_if(rules, [](const LearnedRule& rule) { return rule.source == "sim"; });
  return rules;
}

std::string learned_rule_line(const LearnedRule& rule) {
  json line = {
      {"lever", rule.lever}, {"when", rule.when}, {"effect", rule.effect}, {"rule", rule.rule}};
  if (!rule.action.empty()) line["action"] = rule.action;
  if (!rule.source.empty()) line["source"] = rule.source;
  return line.dump() + "\n";
}

std::vector<LearnedRule> learn_rules(const ControlState& state,
                                     const std::vector<LearnedRule>& known) {
  std::set<std::tuple<std::string, std::string, std::string>> seen;
  for (const LearnedRule& rule : known) {
    seen.insert({rule.lever + "|" + rule.action, rule.when, rule.effect});
  }
  const double band = state.view.baseline_band.band_fraction;
  std::vector<LearnedRule> learned;
  auto add = [&](LearnedRule rule) {
    if (rule.lever.empty() || rule.when.empty()) return;
    if (!seen.insert({rule.lever + "|" + rule.action, rule.when, rule.effect}).second) return;
    learned.push_back(std::move(rule));
  };
  for (const auto& [id, run] : state.runs) {
    if (run.purpose != RunPurpose::kSearch) continue;
    auto proposal = state.proposals.find(run.proposal_id);
    if (proposal == state.proposals.end() || proposal->second.levers.size() != 1) continue;
    const CandidateProposed& p = proposal->second;
    const std::string lever = lever_of(p);
    const std::optional<Bottleneck> bottleneck = bottleneck_of(p.hypothesis);
    if (!bottleneck) continue;
    const std::string tag(tag_of(*bottleneck));
    const std::string words(words_of(*bottleneck));
    const double parent = measured_or_baseline(state, p.parent_run_id);
    if (run.measured && parent > 0) {
      const double gain = run.measured->tokens_per_sec_per_gpu / parent - 1;
      if (gain > band || gain < -band) {
        LearnedRule rule;
        rule.lever = lever;
        rule.when = tag;
        rule.effect = gain > band ? "helped" : "hurt";
        rule.action = action_words(state, p);
        rule.rule =
            "Under " + words + ", " + lever +
            (rule.action.empty() ? "" : " (" + rule.action + ")") +
            (gain > band ? " gained more than the noise band." : " lost more than the noise band.");
        rule.evidence_run_ids = {p.parent_run_id, id};
        // A retry of an out-of-memory layout that won: the layout needed its memory savings.
        const RunState* parent_run = state.run(p.parent_run_id);
        if (gain > band && parent_run && parent_run->failed &&
            parent_run->failed->failure_class == FailureClass::kOom) {
          rule.rule = "Under " + words + ", a layout that ran out of memory won once " + lever +
                      " gave it memory back; retry such layouts before ruling them out.";
        }
        add(std::move(rule));
      }
    }
  }
  return learned;
}

std::string campaign_summary(const ControlState& state, const LeverCatalog& catalog,
                             const std::vector<LearnedRule>& learned) {
  const CampaignView& view = state.view;
  std::ostringstream out;
  out << "# Campaign " << view.campaign_id << "\n\n";
  out << view.settings.model << " on " << view.settings.gpu_count << " x " << view.settings.hardware
      << ", tuner " << view.settings.tuner << ", baseline "
      << format_fixed(view.baseline_band.mean_tokens_per_s_per_gpu, 1) << " tokens/s/GPU, band "
      << format_percent(view.baseline_band.band_fraction, 2) << ".\n\n";
  if (view.stop.shipped) {
    const RecipeShipped& shipped = *view.stop.shipped;
    out << "Shipped: "
        << (shipped.is_baseline
                ? std::string("the baseline recipe")
                : "run " + std::to_string(shipped.run_id) + ", " +
                      format_signed_percent(shipped.gain_fraction, 2) + " over the baseline")
        << ".\n\n";
  }
  std::set<std::string> tried;
  out << "## Winners\n\n";
  bool any = false;
  for (const LeaderChange& change : view.leader.history) {
    auto row = view.ledger.rows.find(change.run_id);
    if (row == view.ledger.rows.end()) continue;
    any = true;
    out << "- run " << change.run_id << ": " << row->second.diff_summary << " ("
        << format_signed_percent(row->second.gain_fraction, 2) << ")\n";
  }
  if (!any) out << "- none: no candidate beat the baseline by more than the band\n";
  out << "\n## Losers\n\n";
  any = false;
  for (const auto& [id, run] : state.runs) {
    if (run.purpose != RunPurpose::kSearch) continue;
    auto proposal = state.proposals.find(run.proposal_id);
    if (proposal != state.proposals.end()) tried.insert(lever_of(proposal->second));
    auto row = view.ledger.rows.find(id);
    if (row == view.ledger.rows.end()) continue;
    const bool won = std::any_of(view.leader.history.begin(), view.leader.history.end(),
                                 [&](const LeaderChange& c) { return c.run_id == id; });
    if (won) continue;
    any = true;
    std::string reason;
    if (run.failed) {
      reason = std::string("failed: ") + to_string(run.failed->failure_class) + " (" +
               run.failed->message.substr(0, 120) + ")";
    } else if (run.measured) {
      reason = "not better than the leader (" +
               format_signed_percent(row->second.gain_fraction, 2) + " over the baseline)";
    } else {
      reason = "no measurement";
    }
    out << "- run " << id << ": " << lever_of(proposal->second) << ": " << reason << "\n";
  }
  if (!any) out << "- none\n";
  out << "\n## Untried levers\n\n";
  any = false;
  for (const CatalogLever& lever : catalog.levers) {
    if (tried.contains(lever.name) || tried.contains(lever.set)) continue;
    any = true;
    out << "- " << lever.name << ": " << lever.mechanism << "\n";
  }
  if (!any) out << "- none\n";
  out << "\n## Rules learned\n\n";
  if (learned.empty()) out << "- none\n";
  for (const LearnedRule& rule : learned) out << "- " << rule.rule << "\n";
  return out.str();
}

}  // namespace attune
