// attune: tunes a working Megatron-LM training recipe for throughput inside a GPU-hour budget,
// and ships a faster recipe only when the correctness gate passes it.
#include <CLI/CLI.hpp>

#include <iostream>

#include "tools/attune/cli.h"

int main(int argc, char** argv) {
  CLI::App app{
      "attune tunes a working Megatron-LM training recipe for throughput, unattended, inside a "
      "GPU-hour budget, and ships the faster recipe only when a correctness gate proves it "
      "still trains the same objective.",
      "attune"};
  app.formatter(attune::cli::help_formatter());
  app.set_version_flag("--version", std::string("attune ") + ATTUNE_VERSION);
  app.require_subcommand(1);
  app.fallthrough(false);

  int exit_code = attune::cli::kExitOk;
  attune::cli::add_campaign_commands(app, exit_code);
  attune::cli::add_view_commands(app, exit_code);
  attune::cli::add_gate_commands(app, exit_code);
  attune::cli::add_sim_commands(app, exit_code);
  attune::cli::add_metrics_command(app, exit_code);
  attune::cli::add_trace_commands(app, exit_code);
  attune::cli::add_compare_command(app, exit_code);
  attune::cli::add_agent_commands(app, exit_code);
  attune::cli::add_key_commands(app, exit_code);
  attune::cli::add_recipe_commands(app, exit_code);
  attune::cli::add_runs_command(app, exit_code);
  attune::cli::add_report_command(app, exit_code);
  attune::cli::add_leaderboard_commands(app, exit_code);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return attune::cli::fail(std::string(e.what()) + " (see attune --help)");
  }
  return exit_code;
}
