// attune recipe show: what a launch script (or a pasted recipe) runs, as attune reads it.
#include <CLI/CLI.hpp>

#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "adapters/script/launch_script.h"
#include "adapters/script/script_recipe.h"
#include "core/text_file.h"
#include "tools/attune/cli.h"

namespace attune::cli {
namespace {

struct ShowOptions {
  std::string file;
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::vector<std::string> files;
  std::string cwd;
  double timeout_seconds = 20;
  bool allow_unsandboxed = false;
  bool flat = false;
  bool json = false;
};

// A flat recipe (flags pasted from a script) read as the resolver's answer.
script::ResolvedScript resolved_of_flat(const Recipe& recipe) {
  script::ResolvedScript out;
  const std::string command = recipe.command.empty() ? kDefaultProgram : recipe.command;
  out.program_path = command.substr(command.rfind(' ') + 1);
  out.program = out.program_path.substr(out.program_path.rfind('/') + 1);
  out.env = recipe.env;
  for (const auto& [flag, value] : recipe.flags) {
    out.args.push_back(flag);
    if (!value.empty()) out.args.push_back(value);
  }
  return out;
}

void print_text(const script::ResolvedScript& resolved, const std::string& source) {
  std::cout << "source    " << source << "\n"
            << "program   " << resolved.program_path << "\n"
            << "launcher  " << (resolved.launcher.empty() ? "-" : resolved.launcher) << "\n";
  for (const auto& [name, value] : resolved.env)
    std::cout << "env       " << name << "=" << value << "\n";
  std::string line;
  for (const std::string& word : resolved.args) {
    if (word.starts_with("--") && !line.empty()) {
      std::cout << "arg       " << line << "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + shell_quote(word);
  }
  if (!line.empty()) std::cout << "arg       " << line << "\n";
  for (const std::string& warning : resolved.warnings) std::cout << "warning   " << warning << "\n";
}

int show_recipe(const ShowOptions& options) {
  auto text = read_text_file(options.file, std::size_t{1} << 20);
  if (!text.ok()) return fail(text.error());
  // A pasted recipe reads as one; a script (a shebang, or text that is not a recipe) runs in bash.
  const std::string& body = text.value();
  const bool looks_like_script = body.starts_with("#!") || body.find('$') != std::string::npos ||
                                 options.file.ends_with(".sh") ||
                                 options.file.ends_with(".slurm") ||
                                 options.file.ends_with(".sbatch");
  if (options.flat || !looks_like_script) {
    auto flat = parse_recipe(text.value(), options.file);
    if (flat.ok()) {
      const script::ResolvedScript resolved = resolved_of_flat(flat.value());
      if (options.json) {
        std::cout << script::resolved_script_json(resolved) << "\n";
      } else {
        print_text(resolved, "a pasted recipe (read, not run)");
      }
      return kExitOk;
    }
    if (options.flat) return fail(flat.error());
  }
  script::ScriptInput input;
  input.path = options.file;
  input.args = options.args;
  for (const std::string& setting : options.env) {
    const std::size_t eq = setting.find('=');
    if (eq == std::string::npos || eq == 0) return fail("--env " + setting + ": expected K=V");
    input.env[setting.substr(0, eq)] = setting.substr(eq + 1);
  }
  input.files = script::companions_at_their_paths(options.files);
  input.invocation_cwd = options.cwd;
  input.timeout_seconds = options.timeout_seconds;
  input.allow_unsandboxed = options.allow_unsandboxed;
  auto resolved = script::resolve_launch_script(input);
  if (!resolved.ok()) return fail(resolved.error());
  auto recipe = script::recipe_of_script(resolved.value(), options.file);
  if (!recipe.ok()) return fail(recipe.error());
  resolved->warnings = recipe->warnings;
  if (options.json) {
    std::cout << script::resolved_script_json(resolved.value()) << "\n";
  } else {
    print_text(resolved.value(),
               std::string("bash ran the script") +
                   (resolved->sandboxed ? " in a sandbox" : " without a sandbox"));
  }
  return kExitOk;
}

}  // namespace

void add_recipe_commands(CLI::App& app, int& exit_code) {
  CLI::App* recipe = app.add_subcommand("recipe", "Read recipes and launch scripts");
  recipe->require_subcommand(1);
  auto options = std::make_shared<ShowOptions>();
  CLI::App* show = recipe->add_subcommand(
      "show",
      "What a launch script runs: bash runs it in a sandbox (bubblewrap: no network, nothing it "
      "writes kept, a time limit) with stub programs first on PATH, and the training program's "
      "arguments, environment and launcher are read from the stubs. A pasted recipe (no "
      "shebang, no $, not *.sh) is read as it is. Exit 0, or 2 with one line");
  show->add_option("FILE", options->file, "The launch script or recipe")->required();
  show->add_option("--arg", options->args, "An argument to the script ($1, $2, ...); repeat");
  show->add_option("--env", options->env, "K=V: a variable the script expects; repeat");
  show->add_option("--file", options->files,
                   "A file the script sources or runs (e.g. a model script beside it), shown to it "
                   "read-only at its own path; repeat");
  show->add_option("--cwd", options->cwd,
                   "The folder the script runs in (default: its own). A folder of this machine "
                   "is shown to it read-only, as a Megatron-LM checkout for a script that checks "
                   "for pretrain_gpt.py; what the script writes there stays in the sandbox");
  show->add_option("--timeout", options->timeout_seconds, "Seconds the script may run")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 600.0));
  show->add_flag("--allow-unsandboxed", options->allow_unsandboxed,
                 "Where no sandbox can be made, run the script anyway (still under the stubs, in "
                 "a temporary folder): it can then reach the network and write outside it");
  show->add_flag("--flat", options->flat, "Read FILE as a pasted recipe, never run it");
  show->add_flag("--json", options->json,
                 "{\"program\", \"args\", \"env\", \"launcher\", \"warnings\", ...}");
  show->callback([&exit_code, options] { exit_code = show_recipe(*options); });
}

}  // namespace attune::cli
