// SbatchScript: the batch script of one run, made from the user's own launch template.
//
// The template is any sbatch script. attune replaces these placeholders and keeps every other
// byte as the user wrote it (a shell's ${VAR} and unknown {words} included):
//   {recipe_command}  the recipe's leading command words, e.g. python pretrain_gpt.py (may be "")
//   {recipe_args}     the recipe's Megatron-LM flags, shell-quoted, on one line
//   {env}             one `export NAME=VALUE` line per environment variable of the recipe
//   {recipe_file}     a file holding the recipe's canonical text
//   {log}             the run's log (Slurm's --output and --error point there too)
//   {nodes} {gpus} {gpus_per_node} {steps} {run_id} {job_name} {campaign_id}
// On `#SBATCH` lines values go in as they are; elsewhere single values are shell-quoted where
// needed. A template without {env} gets the export lines after its leading block of comments and
// #SBATCH directives (sbatch reads directives only before the first command). Pure.
#pragma once

#include <cstdint>
#include <string>

#include "events/recipe.h"

namespace attune {

struct SbatchValues {
  std::string campaign_id;
  std::string job_name;
  std::uint64_t run_id = 0;
  std::uint32_t steps = 0;
  std::uint32_t nodes = 0;
  std::uint32_t gpus = 0;
  std::uint32_t gpus_per_node = 0;
  std::string log_path;     // absolute
  std::string recipe_file;  // absolute
  Recipe recipe;
};

std::string render_sbatch_script(const std::string& job_template, const SbatchValues& values);

}  // namespace attune
