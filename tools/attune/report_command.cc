// `attune report`: the campaign report as HTML or Markdown (report.h), written to a file or stdout.
#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>
#include <memory>

#include "events/whole_file.h"
#include "tools/attune/campaign_figures.h"
#include "tools/attune/cli.h"
#include "tools/attune/report.h"

namespace attune::cli {
namespace {

namespace fs = std::filesystem;

struct ReportOptions {
  std::string db;
  std::optional<std::string> campaign;
  std::string out;
  std::string format;
};

int run_report(const ReportOptions& options) {
  std::string format = options.format;
  if (format.empty()) {
    format = fs::path(options.out).extension() == ".md" ? "md" : "html";
  }
  if (format != "html" && format != "md") {
    return fail("--format: expected html or md, found '" + format + "'");
  }
  auto loaded = load_campaign(options.db, options.campaign);
  if (!loaded.ok()) return fail(loaded.error());
  const EventStore& store = *loaded->store;
  const std::string& campaign_id = loaded->campaign_id;
  auto data = gather_report(store, campaign_id, options.db);
  if (!data.ok()) return fail(data.error());
  const std::string text =
      format == "html" ? render_report_html(data.value()) : render_report_md(data.value());
  if (options.out.empty() || options.out == "-") {
    std::cout << text;
    return kExitOk;
  }
  Status written = write_whole_file(options.out, text, 0644, false);
  if (!written.ok()) return fail(written.error());
  std::cerr << "report written to " << options.out << " (" << data->rows.size() << " runs)\n";
  return kExitOk;
}

}  // namespace

void add_report_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<ReportOptions>();
  CLI::App* report = app.add_subcommand(
      "report",
      "A campaign's report from the ledger: throughput against GPU-hours (one mark per run), the "
      "shipped diff, the gate's evidence and loss curves, stage profiles, MFU, cost and payback; "
      "one self-contained HTML file (nothing fetched) or Markdown");
  add_ledger_options(*report, options->db, options->campaign);
  report->add_option("--out", options->out, "The file to write (default: standard output)");
  report->add_option("--format", options->format,
                     "html or md (default: md for an --out ending in .md, else html)");
  report->callback([&exit_code, options] { exit_code = run_report(*options); });
}

}  // namespace attune::cli
