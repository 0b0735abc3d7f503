// The tuning skill: what an agent tuner is told about the search, as one self-contained SKILL.md.
//
// Renders the editable skill text (adapters/tuner/data/skill.md, compiled in: YAML front matter
// with the skill's name and description, the loop, the measurement rules, the six search rules,
// the tools), then the lever catalog as a list, then the learned rules of past campaigns. The LLM
// tuner sends it as its system prompt; `attune agent install` writes it into an external agent's
// skill folder. A pure function: the same inputs give the same bytes.
#pragma once

#include <string>
#include <string_view>

#include "adapters/tuner/lever_catalog.h"

namespace attune {

// The compiled-in skill.md, as written.
std::string_view builtin_skill_text();

// `learned_rules_jsonl` is CampaignOpened.learned_rules (JSON lines; may be empty).
std::string render_skill(const LeverCatalog& catalog, const std::string& learned_rules_jsonl);

}  // namespace attune
