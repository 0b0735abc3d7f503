// The files a campaign leaves next to its ledger for the user to run and review: the baseline's
// shape (recorded when the campaign opens), and after it ships <id>.shipped.sh, <id>.baseline.sh,
// <id>.shipped.diff and <id>.shipped.json.
#pragma once

#include <string>
#include <vector>

#include "core/control_state.h"
#include "core/runnable_recipe.h"
#include "events/result.h"

namespace attune::cli {

// <db>/<id>.baseline-shape.json: the launcher and the order of the baseline as given, so that the
// scripts written at the end read like the user's own. A campaign without it (older ledgers) gets
// the canonical order.
Status save_baseline_shape(const std::string& db, const std::string& campaign_id,
                           const ScriptShape& shape);
ScriptShape load_baseline_shape(const std::string& db, const std::string& campaign_id);

struct ShippedFiles {
  std::string script;    // <id>.shipped.sh
  std::string baseline;  // <id>.baseline.sh
  std::string diff;      // <id>.shipped.diff
  std::string json;      // <id>.shipped.json
  std::string sbatch;    // Slurm campaigns: <id>.shipped.sbatch, from the user's template
  // A baseline from the user's launch script: that script with the changes applied
  // (<id>.shipped.<script name>), and the changes it could not make, to be made by hand.
  std::string user_script;
  std::vector<std::string> by_hand;
};

ShippedFiles shipped_file_paths(const std::string& db, const std::string& campaign_id);

// Writes the four files of a shipped campaign; an error names the file that could not be written.
// REQUIRES: state.view.stop.shipped.
Result<ShippedFiles> write_shipped_files(const ControlState& state, const std::string& db);

}  // namespace attune::cli
