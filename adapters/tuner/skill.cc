#include "adapters/tuner/skill.h"

#include <sstream>

#include "adapters/tuner/learned_rules.h"

namespace attune {

extern const char kSkillMd[];
extern const std::size_t kSkillMd_size;

namespace {

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += ", ";
    out += item;
  }
  return out;
}

std::vector<std::string> tags_of(const std::vector<Bottleneck>& bottlenecks) {
  std::vector<std::string> tags;
  for (const Bottleneck bottleneck : bottlenecks) tags.emplace_back(tag_of(bottleneck));
  return tags;
}

}  // namespace

std::string_view builtin_skill_text() { return std::string_view(kSkillMd, kSkillMd_size); }

std::string render_skill(const LeverCatalog& catalog, const std::string& learned_rules_jsonl) {
  std::ostringstream out;
  out << builtin_skill_text();
  out << "\n## Lever catalog\n\n"
         "Levers distilled from past campaigns: the mechanism, when each helps (diagnosis tags), "
         "its direction and a rough gain (a prior, not a promise). Any other flag the framework "
         "accepts may be tried too; the correctness gate decides what may run.\n\n";
  for (const CatalogLever& lever : catalog.levers) {
    out << "- **" << lever.name << "** (set " << lever.set << "; flags " << joined(lever.flags)
        << "): " << lever.mechanism << ". Helps when: " << joined(tags_of(lever.helps_when))
        << ". Direction: " << lever.direction << ". Rough gain: " << lever.rough_gain * 100
        << "%.\n";
  }
  out << "\n## Learned rules\n\n";
  if (learned_rules_jsonl.empty()) {
    out << "None yet.\n";
    return out.str();
  }
  auto rules = parse_learned_rules(learned_rules_jsonl, "learned rules");
  if (!rules.ok()) {
    out << "The learned rules could not be read (" << rules.error() << ").\n";
    return out.str();
  }
  for (const LearnedRule& rule : rules.value()) {
    out << "- **" << rule.lever << "** " << rule.effect << " under " << rule.when;
    if (!rule.action.empty()) out << " (" << rule.action << ")";
    out << ": " << rule.rule << "\n";
  }
  if (rules->empty()) out << "None yet.\n";
  return out.str();
}

}  // namespace attune
