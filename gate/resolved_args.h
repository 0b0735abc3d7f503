// Layer 1 again, on the check run of each final candidate: the fully resolved arguments (and
// environment) that actually ran, compared with the baseline's. This is what catches silent
// overrides, e.g. --grad-reduce-in-bf16 turning accumulate_allreduce_grads_in_fp32 from True to
// False, which the recipe diff alone shows only as a communication-looking flag.
//
// Megatron-LM prints its arguments once at start-up (rank 0, after validate_args' rewrites):
//
//   ------------------------ arguments ------------------------
//     accumulate_allreduce_grads_in_fp32 .............. True
//     micro_batch_size ................................ 1
//   -------------------- end of arguments ---------------------
//
// Each line is two spaces, the argparse dest, a space, (48 - length of the dest) dots, a space and
// Python's str() of the value. A launcher may prefix every line of a process (srun's "0: "); the
// prefix of the header line is stripped from the block's lines, and lines without it (other
// processes writing to the same log) are skipped.
//
// All functions are pure and thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "events/event.h"
#include "events/recipe.h"
#include "events/result.h"
#include "gate/config_check.h"
#include "gate/policy.h"

namespace attune {

constexpr std::size_t kResolvedArgsLinesMax = 10000;  // lines in one arguments block

struct ResolvedArgs {
  std::map<std::string, std::string> values;  // dest -> printed value, as printed
  std::size_t header_line = 0;                // 1-based line of the block's header in the log
};

// Finds and parses the arguments block in a whole log. Where the block prints padded_vocab_size
// as None (no flag pinned it), the value is the new size of the tokenizer's later line ' > padded
// vocab (size: V) with D dummy tokens (new size: P)', the size the run used. Errors, one line
// naming the source and
// line: no block, a block without its end line, a malformed line, a dest printed twice, or a
// second block that differs from the first.
Result<ResolvedArgs> parse_resolved_args(std::string_view log, std::string_view source_name);

// One check run (or the baseline's): what it printed, the recipe it was launched with, and the
// container environment when the launcher recorded it.
struct ResolvedRun {
  ResolvedArgs args;
  Recipe recipe;
  std::optional<std::map<std::string, std::string>> env;
};

// One resolved setting that differs between baseline and candidate.
struct ResolvedDifference {
  ChangeKind kind = ChangeKind::kFlag;  // kFlag: an argument (by dest); kEnv: an env var
  std::string name;                     // the dest, or the env var
  std::string flag;  // the catalog flag that sets the dest; empty when no flag does
  std::optional<std::string> before;  // nullopt: not printed / not set on that side
  std::optional<std::string> after;
  ObjectiveClass objective_class = ObjectiveClass::kNumeric;  // unlisted dests are numeric
  CheckVerdict verdict = CheckVerdict::kRefused;
  CheckRule rule = CheckRule::kNumeric;
  // The candidate flags that changed it: the dest's own flag when the recipe changed it, and
  // flags known to set it silently (from the catalog notes) whose value changed. Empty when no
  // change of the recipe explains the difference.
  std::vector<std::string> implied_by;
  std::string message;  // one line
};

struct ResolvedComparison {
  bool passed = false;
  bool env_compared = false;                    // both runs recorded their environment
  std::vector<ResolvedDifference> differences;  // arguments by dest, then env vars by name
  std::vector<ConfigRefusal> failures;          // failing differences, then defects
};

// A difference fails when its setting is numeric or unlisted, frozen, or a listed swap whose
// component test has not passed or whose value is outside its list; the candidate's printed
// arguments also fail on a known defect of the policy that can be read from them. Other
// differences pass and are listed.
ResolvedComparison compare_resolved(const Policy& policy, const ResolvedRun& baseline,
                                    const ResolvedRun& candidate);

// A known silent rewrite: setting `flag` can change the printed `dest` although the recipe does
// not give that dest's own flag. From the notes of events/data/megatron_args.tsv.
struct ArgImplication {
  std::string_view flag;
  std::string_view dest;
  std::string_view note;
};
std::vector<ArgImplication> known_arg_implications();

// A printed argument that no flag sets (Megatron derives it in validate_args), with its class.
struct DerivedArg {
  std::string_view dest;
  ObjectiveClass objective_class;
  std::string_view note;
};
std::vector<DerivedArg> known_derived_args();

}  // namespace attune
