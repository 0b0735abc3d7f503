#include "tools/attune/shipped_files.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "adapters/launcher/slurm/sbatch_script.h"
#include "adapters/launcher/slurm/slurm_options.h"
#include "core/text_file.h"
#include "events/sha256.h"
#include "events/whole_file.h"
#include "projections/number_format.h"
#include "tools/attune/campaign_session.h"

namespace attune::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr int kShippedSchemaVersion = 1;

std::string shape_path(const std::string& db, const std::string& campaign_id) {
  return (fs::path(db) / (campaign_id + ".baseline-shape.json")).string();
}

Status write_whole(const std::string& path, const std::string& text, bool executable) {
  return write_whole_file(path, text, executable ? 0755 : 0644, true);
}

json changes_json(const Recipe& baseline, const Recipe& shipped) {
  json changes = json::array();
  for (const SettingChange& change : diff_recipes(baseline, shipped)) {
    json item = {{"kind", change.kind == ChangeKind::kEnv ? "env" : "flag"}, {"name", change.name}};
    item["before"] = change.before_present ? json(change.before) : json(nullptr);
    item["after"] = change.after_present ? json(change.after) : json(nullptr);
    changes.push_back(std::move(item));
  }
  return changes;
}

json recipe_json(const Recipe& recipe) {
  return {{"command", recipe.command}, {"env", recipe.env}, {"flags", recipe.flags}};
}

// The user's own script with the shipped changes, when the baseline came from it and it has not
// changed since the campaign opened.
Status write_user_script(const ScriptShape& shape, const Recipe& baseline, const Recipe& shipped,
                         const std::string& db, const std::string& campaign_id,
                         ShippedFiles& paths) {
  if (shape.script_path.empty()) return Ok{};
  auto text = read_text_file(shape.script_path, std::size_t{1} << 20);
  if (!text.ok() || to_hex(sha256(text.value())) != shape.script_hash) {
    paths.by_hand.push_back(
        shape.script_path +
        " changed or is gone since the campaign opened; apply the diff by hand");
    return Ok{};
  }
  const ScriptEdit edit = edit_user_script(text.value(), diff_recipes(baseline, shipped));
  paths.user_script =
      (fs::path(db) / (campaign_id + ".shipped." + fs::path(shape.script_path).filename().string()))
          .string();
  paths.by_hand = edit.by_hand;
  return write_whole(paths.user_script, edit.text, true);
}

// The shipped recipe as one more batch job of the user's Slurm template, ready for sbatch.
Result<std::string> write_shipped_sbatch(const CampaignView& view, const Recipe& recipe,
                                         const std::string& db) {
  auto slurm = load_slurm_options(slurm_options_path(db, view.campaign_id));
  const std::uint32_t per_node = slurm.ok() ? slurm->gpus_per_node : 8;
  const std::uint32_t gpus = view.settings.gpu_count;
  const fs::path base = fs::absolute(fs::path(db) / view.campaign_id);
  const SbatchValues values{view.campaign_id,
                            view.campaign_id + "-shipped",
                            view.stop.shipped->run_id,
                            view.settings.steps_per_run,
                            (gpus + per_node - 1) / per_node,
                            gpus,
                            per_node,
                            base.string() + ".shipped.log",
                            base.string() + ".shipped.recipe",
                            recipe};
  Status recipe_file = write_whole(values.recipe_file, canonical_text(recipe), false);
  if (!recipe_file.ok()) return make_error(recipe_file.error());
  const std::string path = base.string() + ".shipped.sbatch";
  Status sbatch = write_whole(path, render_sbatch_script(view.settings.job_template, values), true);
  if (!sbatch.ok()) return make_error(sbatch.error());
  return path;
}

}  // namespace

Status save_baseline_shape(const std::string& db, const std::string& campaign_id,
                           const ScriptShape& shape) {
  const json out = {{"schema_version", kShippedSchemaVersion},
                    {"launcher", shape.launcher},
                    {"script_path", shape.script_path},
                    {"script_hash", shape.script_hash},
                    {"env_order", shape.order.env},
                    {"flag_order", shape.order.flags}};
  return write_whole(shape_path(db, campaign_id), out.dump(2) + "\n", false);
}

ScriptShape load_baseline_shape(const std::string& db, const std::string& campaign_id) {
  ScriptShape shape;
  auto text = read_text_file(shape_path(db, campaign_id), std::size_t{1} << 20);
  if (!text.ok()) return shape;
  const json in = json::parse(text.value(), nullptr, false);
  if (!in.is_object()) return shape;
  if (in.contains("launcher") && in["launcher"].is_string()) shape.launcher = in["launcher"];
  if (in.contains("script_path") && in["script_path"].is_string()) {
    shape.script_path = in["script_path"];
  }
  if (in.contains("script_hash") && in["script_hash"].is_string()) {
    shape.script_hash = in["script_hash"];
  }
  for (const auto& [key, list] :
       {std::pair{"env_order", &shape.order.env}, std::pair{"flag_order", &shape.order.flags}}) {
    if (!in.contains(key) || !in[key].is_array()) continue;
    for (const json& name : in[key]) {
      if (name.is_string()) list->push_back(name.get<std::string>());
    }
  }
  return shape;
}

ShippedFiles shipped_file_paths(const std::string& db, const std::string& campaign_id) {
  const fs::path base = fs::path(db) / campaign_id;
  return ShippedFiles{base.string() + ".shipped.sh",
                      base.string() + ".baseline.sh",
                      base.string() + ".shipped.diff",
                      base.string() + ".shipped.json",
                      "",
                      "",
                      {}};
}

Result<ShippedFiles> write_shipped_files(const ControlState& state, const std::string& db) {
  const CampaignView& view = state.view;
  ATTUNE_ASSERT(view.stop.shipped.has_value(), "only a shipped campaign has shipped files");
  const RecipeShipped& shipped = *view.stop.shipped;
  auto baseline = parse_recipe(view.settings.baseline_recipe, "the recorded baseline recipe");
  auto recipe = parse_recipe(shipped.recipe, "the shipped recipe");
  if (!baseline.ok()) return make_error(baseline.error());
  if (!recipe.ok()) return make_error(recipe.error());
  const ScriptShape shape = load_baseline_shape(db, view.campaign_id);
  ShippedFiles paths = shipped_file_paths(db, view.campaign_id);
  const std::string what = shipped.is_baseline
                               ? "the baseline recipe: nothing cleared the band and the gate"
                               : "run " + std::to_string(shipped.run_id) + ", " +
                                     format_signed_percent(shipped.gain_fraction, 2) +
                                     " over the baseline";
  const std::string shipped_text = runnable_script(
      *recipe, *baseline, shape, {"Shipped by attune, campaign " + view.campaign_id, what});
  const std::string baseline_text = runnable_script(
      *baseline, *baseline, shape, {"The baseline of attune campaign " + view.campaign_id});
  if (Status user = write_user_script(shape, *baseline, *recipe, db, view.campaign_id, paths);
      !user.ok()) {
    return make_error(user.error());
  }
  json out = {{"schema_version", kShippedSchemaVersion},
              {"campaign_id", view.campaign_id},
              {"run_id", shipped.run_id},
              {"is_baseline", shipped.is_baseline},
              {"gain_fraction", shipped.gain_fraction},
              {"tokens_per_s_per_gpu", shipped.tokens_per_sec_per_gpu},
              {"evidence", shipped.evidence},
              {"recipe_hash", shipped.recipe_hash},
              {"launcher", shape.launcher},
              {"recipe", recipe_json(*recipe)},
              {"baseline", recipe_json(*baseline)},
              {"changes", changes_json(*baseline, *recipe)}};
  if (!shape.script_path.empty()) {
    out["user_script"] = paths.user_script;
    out["change_by_hand"] = paths.by_hand;
  }
  const std::string diff =
      unified_diff(baseline_text, shipped_text, fs::path(paths.baseline).filename().string(),
                   fs::path(paths.script).filename().string());
  if (view.settings.launcher == "slurm") {
    auto sbatch = write_shipped_sbatch(view, *recipe, db);
    if (!sbatch.ok()) return make_error(sbatch.error());
    paths.sbatch = std::move(sbatch).value();
  }
  for (const auto& [path, text, executable] :
       {std::tuple{paths.script, shipped_text, true},
        std::tuple{paths.baseline, baseline_text, true}, std::tuple{paths.diff, diff, false},
        std::tuple{paths.json, out.dump(2) + "\n", false}}) {
    Status written = write_whole(path, text, executable);
    if (!written.ok()) return make_error(written.error());
  }
  return paths;
}

}  // namespace attune::cli
