#include "adapters/launcher/slurm/sbatch_script.h"

#include <map>
#include <sstream>
#include <vector>

#include "events/recipe.h"

namespace attune {
namespace {

struct Expansion {
  std::string raw;     // as it goes into an #SBATCH line, or verbatim shell text
  bool quote = false;  // a single value: shell-quoted outside #SBATCH lines
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The canonical text of the part of a recipe: one line per setting, values already quoted.
std::vector<std::string> canonical_lines(const Recipe& part) {
  return lines_of(canonical_text(part));
}

std::string recipe_args(const Recipe& recipe) {
  Recipe flags;
  flags.flags = recipe.flags;
  std::string out;
  for (const std::string& line : canonical_lines(flags)) {
    if (!out.empty()) out += ' ';
    out += line;
  }
  return out;
}

std::string env_exports(const Recipe& recipe) {
  Recipe env;
  env.env = recipe.env;
  std::string out;
  for (const std::string& line : canonical_lines(env)) {
    if (!out.empty()) out += '\n';
    out += "export " + line;
  }
  return out;
}

std::string render_line(const std::string& line, const std::map<std::string, Expansion>& values,
                        bool directive) {
  std::string out;
  std::size_t at = 0;
  while (at < line.size()) {
    const std::size_t open = line.find('{', at);
    if (open == std::string::npos) break;
    const std::size_t close = line.find('}', open);
    if (close == std::string::npos) break;
    out += line.substr(at, open - at);
    const auto found = values.find(line.substr(open + 1, close - open - 1));
    if (found == values.end()) {
      out += '{';
      at = open + 1;
      continue;
    }
    out += found->second.quote && !directive ? shell_quote_argument(found->second.raw)
                                             : found->second.raw;
    at = close + 1;
  }
  return out + line.substr(at);
}

bool is_header_line(const std::string& line) {
  const std::size_t start = line.find_first_not_of(" \t");
  return start == std::string::npos || line[start] == '#';
}

}  // namespace

std::string render_sbatch_script(const std::string& job_template, const SbatchValues& values) {
  const std::string exports = env_exports(values.recipe);
  const std::map<std::string, Expansion> expansions = {
      {"recipe_command", {values.recipe.command, false}},
      {"recipe_args", {recipe_args(values.recipe), false}},
      {"env", {exports, false}},
      {"recipe_file", {values.recipe_file, true}},
      {"log", {values.log_path, true}},
      {"nodes", {std::to_string(values.nodes), true}},
      {"gpus", {std::to_string(values.gpus), true}},
      {"gpus_per_node", {std::to_string(values.gpus_per_node), true}},
      {"steps", {std::to_string(values.steps), true}},
      {"run_id", {std::to_string(values.run_id), true}},
      {"job_name", {values.job_name, true}},
      {"campaign_id", {values.campaign_id, true}},
  };
  const std::vector<std::string> lines = lines_of(job_template);
  const bool env_placed = job_template.find("{env}") != std::string::npos;
  // Where exports go when the template does not say: after the leading comment block.
  std::size_t header_end = 0;
  while (header_end < lines.size() && is_header_line(lines[header_end])) ++header_end;

  std::string script;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i == header_end && !env_placed && !exports.empty()) script += exports + "\n";
    const bool directive = lines[i].rfind("#SBATCH", 0) == 0;
    script += render_line(lines[i], expansions, directive) + "\n";
  }
  if (header_end == lines.size() && !env_placed && !exports.empty()) script += exports + "\n";
  return script;
}

}  // namespace attune
