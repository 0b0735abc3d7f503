// Learned rules: what a campaign established about a lever, phrased without model names or
// figures, kept in a catalog (JSON lines) that later campaigns read. The expert tuner trusts a
// lever more under a bottleneck where it helped before and less where it hurt.
//
// A line: {"lever": "moe-dispatcher", "when": "ep_a2a", "effect": "helped", "rule": "..."}.
// Pure functions; the file I/O is the caller's.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "adapters/tuner/lever_catalog.h"
#include "core/control_state.h"
#include "events/bottleneck.h"
#include "events/recipe.h"
#include "events/result.h"

namespace attune {

struct LearnedRule {
  std::string lever;
  std::string when;    // the diagnosis tag it was learned under
  std::string effect;  // "helped" or "hurt"
  std::string action;  // the change in words ("--moe-token-dispatcher-type set to flex"), if any
  std::string rule;    // one sentence, no model names, no figures
  std::vector<RunId> evidence_run_ids;
  // Where it was learned: the campaign's launcher ("sim", "local", "slurm"); empty in catalogs
  // written before rules were tagged.
  std::string source;
};

// Errors name the source and the line. A last line without its newline that does not parse is a
// torn append (a writer stopped mid-line): it is skipped, and `torn_tail` (when given) says so.
Result<std::vector<LearnedRule>> parse_learned_rules(std::string_view text,
                                                     std::string_view source_name,
                                                     std::string* torn_tail = nullptr);
// Rules learned in the simulated world are kept out of a campaign on a real cluster unless it
// asks for them ([tuner] simulated_rules = true): the simulator's lessons are not facts about a
// real cluster.
std::vector<LearnedRule> rules_for_launcher(std::vector<LearnedRule> rules,
                                            const std::string& launcher, bool simulated_rules);
std::string learned_rule_line(const LearnedRule& rule);  // one JSON line, with its newline

// A single-lever change in words, e.g. "--moe-token-dispatcher-type set to flex" or
// "--overlap-param-gather removed"; empty when a value is a figure (a parallel degree).
std::string change_words(const Recipe& from, const Recipe& to);

// The rules a finished campaign establishes: a single-lever search run that beat its parent by
// more than the band (helped) or fell short of it by more than the band (hurt), under the
// bottleneck its hypothesis named; and an out-of-memory layout that won once retried with
// recomputation. At most one rule per (lever, bottleneck, effect); none already in `known`.
std::vector<LearnedRule> learn_rules(const ControlState& state,
                                     const std::vector<LearnedRule>& known);

// A Markdown summary of a campaign: what shipped, the winners, the losers with reasons, the
// catalog's untried levers and the rules learned.
std::string campaign_summary(const ControlState& state, const LeverCatalog& catalog,
                             const std::vector<LearnedRule>& learned);

}  // namespace attune
