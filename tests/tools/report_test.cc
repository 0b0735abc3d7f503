// What a user looks at after a campaign: the output of `campaign run` (it fits 100 columns, its
// progress goes to stderr), `attune runs`, the HTML and Markdown report (rendered by a real
// browser: headless Chromium from Debian), the leaderboard, and `schema_version` in every
// machine-readable output. The four paper workloads' example campaigns run once for the suite.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "events/codec.h"
#include "events/event_store.h"
#include "tests/tools/private_data_home.h"
#include "tests/tools/shell_command.h"

namespace attune {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing_support::CommandOutcome;

constexpr std::size_t kWidth = 100;

std::string attune_bin() { return std::string(ATTUNE_BIN_DIR) + "/attune"; }

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::size_t code_points(const std::string& line) {
  return static_cast<std::size_t>(std::count_if(line.begin(), line.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

// The lines of `text` wider than `width` code points.
std::vector<std::string> wide_lines(const std::string& text, std::size_t width = kWidth) {
  std::vector<std::string> wide;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (code_points(line) > width) wide.push_back(line);
  }
  return wide;
}

struct Campaign {
  std::string example;
  std::string db;
  std::string id;
  CommandOutcome run;       // text output
  CommandOutcome run_json;  // the same campaign (another ledger) with --json
};

fs::path suite_dir() {
  return fs::temp_directory_path() / ("attune-report-test-" + std::to_string(::getpid()));
}

const std::vector<std::string>& paper_workloads() {
  static const std::vector<std::string> names = {
      "glm-4.5-b200x128", "minimax-m2-b200x64", "mixtral-8x22b-h100x128", "llama3.1-405b-b200x128"};
  return names;
}

// An example campaign, run (once per test process) with text output and, into another ledger,
// with --json.
const Campaign& campaign(const std::string& name) {
  static std::map<std::string, Campaign> runs;
  if (auto found = runs.find(name); found != runs.end()) return found->second;
  fs::create_directories(suite_dir());
  Campaign c;
  c.example = std::string(ATTUNE_SOURCE_DIR) + "/examples/" + name + ".toml";
  c.db = (suite_dir() / name).string();
  fs::remove_all(c.db);
  fs::remove_all(c.db + "-json");
  c.run = testing_support::run_shell(attune_bin() + " campaign run " + c.example + " --db " + c.db);
  c.run_json = testing_support::run_shell(attune_bin() + " campaign run " + c.example + " --db " +
                                          c.db + "-json --json");
  const json summary = json::parse(c.run_json.out, nullptr, false);
  if (summary.is_object()) c.id = summary.value("campaign_id", "");
  return runs.emplace(name, std::move(c)).first->second;
}

// The example's [cost] price of a GPU-hour.
double price_of(const Campaign& c) {
  const std::string text = slurp(c.example);
  std::smatch match;
  if (!std::regex_search(text, match, std::regex("usd_per_gpu_hour = ([0-9.]+)"))) return 0.0;
  return std::stod(match[1]);
}

// The opening of a hand-written ledger: Qwen3-30B-A3B on 16 H100.
CampaignOpened qwen_opened(const std::string& id) {
  CampaignOpened opened;
  opened.name = id;
  opened.model = "qwen3-30b-a3b";
  opened.hardware = "h100";
  opened.gpu_count = 16;
  opened.seq_length = 4096;
  opened.global_batch = 256;
  opened.precision = "bf16";
  opened.baseline_recipe = "--micro-batch-size 1\n";
  return opened;
}

// A ledger written by hand: one calibration run, measured and profiled on two pipeline stages.
std::string profiled_ledger(const fs::path& dir, const std::string& data = "synthetic") {
  const std::string id = "profiled";
  fs::create_directories(dir.parent_path());
  auto store = EventStore::open(dir.string());
  EXPECT_TRUE(store.ok()) << store.error();
  CampaignOpened opened = qwen_opened(id);
  opened.data = data;
  CandidateProposed proposed;
  proposed.proposal_id = 1;
  proposed.purpose = RunPurpose::kCalibration;
  proposed.profile = true;
  LaunchAdmitted admitted;
  admitted.proposal_id = 1;
  admitted.run_id = 1;
  admitted.purpose = RunPurpose::kCalibration;
  admitted.gpus = 16;
  RunMeasured measured;
  measured.run_id = 1;
  measured.tokens_per_sec_per_gpu = 5000;
  ProfileAnalyzed profile;
  profile.run_id = 1;
  profile.stages = {{0, 100, 70, {{"ep_a2a", 20}, {"pp_p2p", 4}}, 3, 3},
                    {1, 98, 80, {{"tp", 10}}, 2, 6}};
  profile.largest_cost = "ep_a2a on stage 0";
  std::vector<NewEvent> events;
  const std::int64_t t = 1'700'000'000'000'000'000;
  for (Body body : std::vector<Body>{
           opened, proposed, admitted, JobStarted{1, t, {"node-1", "node-2"}},
           JobFinished{1, t + 3'600'000'000'000, "COMPLETED", "sim", ""}, measured,
           Charged{1, Account::kTuner, 16, t, t + 3'600'000'000'000, 16.0}, profile}) {
    events.push_back(NewEvent{t, "test", std::move(body)});
  }
  auto appended = (*store)->append(id, 0, std::move(events));
  EXPECT_TRUE(appended.ok()) << appended.error();
  return id;
}

// A ledger written by hand: six calibration runs, the third on a slow node, and the band set
// from the other five.
std::string left_out_ledger(const fs::path& dir) {
  const std::string id = "left-out";
  fs::create_directories(dir.parent_path());
  auto store = EventStore::open(dir.string());
  EXPECT_TRUE(store.ok()) << store.error();
  std::vector<NewEvent> events;
  const std::int64_t t = 1'700'000'000'000'000'000;
  events.push_back(NewEvent{t, "test", qwen_opened(id)});
  const std::vector<double> throughputs = {5630, 5640, 4830, 5540, 5660, 5600};
  for (std::size_t i = 0; i < throughputs.size(); ++i) {
    const auto run = static_cast<RunId>(i + 1);
    const std::int64_t start = t + static_cast<std::int64_t>(i) * 3'600'000'000'000;
    CandidateProposed proposed;
    proposed.proposal_id = run;
    proposed.purpose = RunPurpose::kCalibration;
    LaunchAdmitted admitted;
    admitted.proposal_id = run;
    admitted.run_id = run;
    admitted.purpose = RunPurpose::kCalibration;
    admitted.gpus = 16;
    RunMeasured measured;
    measured.run_id = run;
    measured.tokens_per_sec_per_gpu = throughputs[i];
    for (Body body : std::vector<Body>{
             proposed, admitted, JobStarted{run, start, {"node-" + std::to_string(run)}},
             JobFinished{run, start + 3'600'000'000'000, "COMPLETED", "sim", ""}, measured,
             Charged{run, Account::kTuner, 16, start, start + 3'600'000'000'000, 16.0}}) {
      events.push_back(NewEvent{start, "test", std::move(body)});
    }
  }
  BandSet band;
  band.calibration_run_ids = {1, 2, 4, 5, 6};
  band.mean_tokens_per_sec_per_gpu = 5614;
  band.rsd = 0.0079;
  band.band_fraction = 0.03;
  band.mean_launch_gpu_hours = 16;
  band.budget_gpu_hours = 480;
  events.push_back(NewEvent{t, "test", band});
  auto appended = (*store)->append(id, 0, std::move(events));
  EXPECT_TRUE(appended.ok()) << appended.error();
  return id;
}

// Every data-run in the report, in order.
std::vector<int> data_runs(const std::string& html) {
  std::vector<int> runs;
  const std::regex mark("data-run=\"([0-9]+)\"");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), mark); it != std::sregex_iterator();
       ++it) {
    runs.push_back(std::stoi((*it)[1]));
  }
  return runs;
}

class Report : public ::testing::Test {
 protected:
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(suite_dir(), ec);
  }
  static CommandOutcome attune(const std::string& args) {
    return testing_support::run_shell(attune_bin() + " " + args);
  }
  static const Campaign& glm() { return campaign("glm-4.5-b200x128"); }
  static json runs_json(const Campaign& c) {
    const CommandOutcome runs = attune("runs --db " + c.db + " --campaign " + c.id + " --json");
    EXPECT_EQ(runs.exit_code, 0) << runs.err;
    return json::parse(runs.out);
  }
};

// The four paper workloads' example campaigns, each run once: their output fits 100 columns,
// their summaries carry MFU, cost and payback, their reports are self-contained with one mark per
// run, and the leaderboard lists all four.
TEST_F(Report, TheFourPaperWorkloads) {
  {
    SCOPED_TRACE("output within 100 columns");
    for (const std::string& name : paper_workloads()) {
      const Campaign& c = campaign(name);
      ASSERT_EQ(c.run.exit_code, 0) << name << ": " << c.run.err;
      EXPECT_EQ(wide_lines(c.run.out), std::vector<std::string>{}) << name;
      EXPECT_EQ(wide_lines(c.run.err), std::vector<std::string>{}) << name;
      // The summary names what each run changed against its parent, and the report beside it.
      EXPECT_NE(c.run.out.find("report    "), std::string::npos) << c.run.out;
    }
  }
  {
    SCOPED_TRACE("MFU, cost and payback");
    for (const std::string& name : paper_workloads()) {
      const Campaign& c = campaign(name);
      const json summary = json::parse(c.run_json.out);
      const json& e = summary.at("economics");
      ASSERT_TRUE(e.at("baseline_mfu").is_number()) << name;
      EXPECT_GT(e["baseline_mfu"].get<double>(), 0.001) << name;
      EXPECT_LT(e["baseline_mfu"].get<double>(), 1.0) << name;
      ASSERT_TRUE(e.at("tuning_usd").is_number()) << name;
      ASSERT_GT(price_of(c), 0.0) << name;
      EXPECT_NEAR(e["tuning_usd"].get<double>(), e["tuning_gpu_hours"].get<double>() * price_of(c),
                  1e-6)
          << name;
      EXPECT_NE(c.run.out.find("mfu       "), std::string::npos) << name;
      EXPECT_NE(c.run.out.find("per million tokens"), std::string::npos) << name;
      EXPECT_NE(c.run.out.find("payback   "), std::string::npos) << name;
      if (!e.at("shipped_is_baseline").get<bool>()) {
        // T x N x (shipped / baseline - 1) = tuning GPU-hours.
        const double gain = e["shipped_tokens_per_s_per_gpu"].get<double>() /
                                e["baseline_tokens_per_s_per_gpu"].get<double>() -
                            1.0;
        EXPECT_NEAR(e.at("payback_hours").get<double>() * e["gpu_count"].get<double>() * gain,
                    e["tuning_gpu_hours"].get<double>(), 1e-6)
            << name;
      }
    }
  }
  {
    SCOPED_TRACE("self-contained report");
    for (const std::string& name : paper_workloads()) {
      const Campaign& c = campaign(name);
      const fs::path beside = fs::path(c.db) / (c.id + ".report.html");
      // `campaign run --json` wrote its report beside its own ledger; this one makes it again.
      const fs::path out = suite_dir() / (name + ".html");
      const CommandOutcome report =
          attune("report --db " + c.db + " --campaign " + c.id + " --out " + out.string());
      ASSERT_EQ(report.exit_code, 0) << report.err;
      const std::string html = slurp(out);
      EXPECT_TRUE(fs::exists(beside)) << beside;
      std::vector<int> marks = data_runs(html);
      std::vector<int> expected;
      const json runs = runs_json(c);
      for (const json& run : runs.at("runs")) expected.push_back(run["run_id"]);
      EXPECT_EQ(marks, expected) << name;
      for (const std::string outside : {"http://", "https://", "<link", "src=", "@import"}) {
        EXPECT_EQ(html.find(outside), std::string::npos) << name << ": " << outside;
      }
      EXPECT_NE(html.find("class=\"leader\""), std::string::npos);
      EXPECT_NE(html.find("class=\"band\""), std::string::npos);
      EXPECT_NE(html.find("The gate's evidence"), std::string::npos);
    }
  }
  {
    SCOPED_TRACE("the leaderboard");
    const std::string board = (suite_dir() / "board").string();
    std::set<std::string> models;
    for (const std::string& name : paper_workloads()) {
      const Campaign& c = campaign(name);
      const CommandOutcome add =
          attune("leaderboard add --db " + c.db + " --campaign " + c.id + " --board " + board);
      EXPECT_EQ(add.exit_code, 0) << name << ": " << add.err;
    }
    const CommandOutcome show = attune("leaderboard show --board " + board + " --json");
    ASSERT_EQ(show.exit_code, 0) << show.err;
    const json out = json::parse(show.out);
    EXPECT_EQ(out.at("schema_version"), 1);
    for (const json& row : out.at("rows")) {
      models.insert(row["model"]);
      EXPECT_GT(row["tokens_per_s_per_gpu"].get<double>(), 0);
      EXPECT_TRUE(row["mfu"].is_number());
      EXPECT_TRUE(row["usd_per_million_tokens"].is_number());
      EXPECT_EQ(row["ledger_head_hash"].get<std::string>().size(), 64u);
      EXPECT_FALSE(row["gate_verdicts"].empty());
      EXPECT_FALSE(row["recipe"].get<std::string>().empty());
      // A campaign that kept its baseline lists it at its calibration mean, saying so.
      if (row["gain_fraction"].get<double>() == 0.0) {
        EXPECT_EQ(row["gate_verdicts"][0].get<std::string>().rfind("the baseline shipped", 0), 0u);
        EXPECT_EQ(row["tokens_per_s_per_gpu"], row["baseline_tokens_per_s_per_gpu"]);
      }
    }
    EXPECT_EQ(models,
              (std::set<std::string>{"glm-4.5", "minimax-m2", "mixtral-8x22b", "llama3.1-405b"}));
    const CommandOutcome text = attune("leaderboard show --board " + board);
    EXPECT_EQ(wide_lines(text.out), std::vector<std::string>{});
    const CommandOutcome md = attune("leaderboard show --board " + board + " --format md");
    EXPECT_NE(md.out.find("| model | accelerator |"), std::string::npos);
    const CommandOutcome html = attune("leaderboard show --board " + board + " --format html");
    const std::regex entry("<tr data-campaign=\"");
    EXPECT_EQ(std::distance(std::sregex_iterator(html.out.begin(), html.out.end(), entry),
                            std::sregex_iterator()),
              4);
    EXPECT_NE(html.out.find("<details>"), std::string::npos);
  }
}

TEST_F(Report, ProgressGoesToStderrWithElapsedTimeAndTheBudgetsEta) {
  const Campaign& c = glm();
  for (const std::string word : {"submitted", "started on", "elapsed", "budget ETA", "band set"}) {
    EXPECT_NE(c.run.err.find(word), std::string::npos) << word << " in\n" << c.run.err;
    EXPECT_EQ(c.run.out.find(word), std::string::npos) << word << " on stdout";
    // Under --json too, stdout holding only the summary.
    EXPECT_NE(c.run_json.err.find(word), std::string::npos) << word;
  }
  const json summary = json::parse(c.run_json.out);
  EXPECT_EQ(summary.at("schema_version"), 2);
}

TEST_F(Report, RunsGivesOneRowPerRunInEachFormat) {
  const Campaign& c = glm();
  ASSERT_FALSE(c.id.empty()) << c.run_json.err;
  const json runs = runs_json(c);
  EXPECT_EQ(runs.at("schema_version"), 1);
  const std::string exported =
      attune("ledger export --db " + c.db + " --campaign " + c.id + " --format jsonl").out;
  std::size_t admitted = 0;
  std::istringstream lines(exported);
  for (std::string line; std::getline(lines, line);) {
    const json event = json::parse(line);
    EXPECT_EQ(event.at("schema_version"), 2);
    admitted += event.dump().find("\"LaunchAdmitted\"") != std::string::npos ? 1 : 0;
  }
  ASSERT_GT(admitted, 6u);
  EXPECT_EQ(runs.at("runs").size(), admitted);
  bool child_of_a_run = false;
  for (const json& run : runs["runs"]) {
    if (run["purpose"] == "search" && run["parent_run_id"] == 0) {
      EXPECT_EQ(run["change"], run["change_from_baseline"]);
    }
    if (run["purpose"] == "search" && run["parent_run_id"].get<int>() > 0) {
      child_of_a_run = true;
      EXPECT_NE(run["change"], run["change_from_baseline"]) << run.dump();
    }
  }
  EXPECT_TRUE(child_of_a_run) << "the expert builds on its leader";
  const CommandOutcome table = attune("runs --db " + c.db + " --campaign " + c.id);
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_EQ(wide_lines(table.out), std::vector<std::string>{});
  const CommandOutcome csv = attune("runs --db " + c.db + " --campaign " + c.id + " --format csv");
  EXPECT_EQ(static_cast<std::size_t>(std::count(csv.out.begin(), csv.out.end(), '\n')),
            admitted + 1);
  const CommandOutcome wide = attune("runs --db " + c.db + " --campaign " + c.id + " --wide");
  EXPECT_FALSE(wide_lines(wide.out).empty()) << "--wide prints every change whole";
  const CommandOutcome bad = attune("runs --db " + c.db + " --format yaml");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("table, csv or json"), std::string::npos) << bad.err;
}

TEST_F(Report, ChromiumRendersTheReportWithEveryRunOnTheChart) {
  std::string browser;
  for (const char* candidate : {"chromium", "chromium-headless-shell", "google-chrome"}) {
    if (testing_support::run_shell(std::string("command -v ") + candidate).exit_code == 0) {
      browser = candidate;
      break;
    }
  }
  ASSERT_FALSE(browser.empty()) << "headless Chromium is a test dependency (tools/setup.sh test)";
  const Campaign& c = glm();
  const fs::path html = suite_dir() / "chromium.html";
  ASSERT_EQ(
      attune("report --db " + c.db + " --campaign " + c.id + " --out " + html.string()).exit_code,
      0);
  const fs::path profile = suite_dir() / "chromium-profile";
  const std::string flags =
      " --headless --no-sandbox --disable-gpu --no-first-run "
      "--user-data-dir=" +
      profile.string();
  const CommandOutcome dom = testing_support::run_shell(
      browser + flags + " --virtual-time-budget=2000 --dump-dom file://" + html.string());
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  const std::size_t runs = runs_json(c).at("runs").size();
  // The page's own script ran in the browser and counted the marks it found in the rendered DOM.
  EXPECT_NE(dom.out.find("data-marks=\"" + std::to_string(runs) + "\""), std::string::npos)
      << dom.out.substr(0, 400);
  EXPECT_EQ(data_runs(dom.out.substr(0, dom.out.find("<table class=\"runs\""))).size(), runs);
  // A screenshot of the rendered report is kept as a test artifact.
  const fs::path artifacts = fs::path(ATTUNE_BIN_DIR).parent_path() / "test-artifacts";
  fs::create_directories(artifacts);
  const fs::path png = artifacts / "report-glm-4.5.png";
  fs::remove(png);
  const CommandOutcome shot = testing_support::run_shell(
      browser + flags + " --window-size=1200,2000 --screenshot=" + png.string() + " file://" +
      html.string());
  ASSERT_EQ(shot.exit_code, 0) << shot.err;
  const std::string image = slurp(png);
  ASSERT_GT(image.size(), 10000u);
  EXPECT_EQ(image.substr(1, 3), "PNG");
}

TEST_F(Report, MarkdownGivesTheSameForAPullRequest) {
  const Campaign& c = glm();
  const CommandOutcome md = attune("report --db " + c.db + " --campaign " + c.id + " --format md");
  ASSERT_EQ(md.exit_code, 0) << md.err;
  const std::size_t runs = runs_json(c).at("runs").size();
  const std::regex row("\n\\| [0-9]+( \\(shipped\\))? \\| (calibration|search|check|retry) \\|");
  const auto count = static_cast<std::size_t>(std::distance(
      std::sregex_iterator(md.out.begin(), md.out.end(), row), std::sregex_iterator()));
  EXPECT_EQ(count, runs);
  // A failed run's row gives its class and the cause its failure names.
  int named = 0;
  const json all_runs = runs_json(c);
  for (const json& run : all_runs.at("runs")) {
    if (run["failure_cause"].is_null() || run["failure_cause"] == "unknown") continue;
    ++named;
    const std::string cell = "| " + run["failure_class"].get<std::string>() + " (" +
                             run["failure_cause"].get<std::string>() + ") |";
    EXPECT_NE(md.out.find(cell), std::string::npos) << cell;
  }
  EXPECT_GT(named, 0) << "the premise: a run failed with a named cause (DeepEP across nodes)";
  for (const std::string part :
       {"```mermaid", "## The gate's evidence", "| MFU |", "| payback |", "baseline loss"}) {
    EXPECT_NE(md.out.find(part), std::string::npos) << part;
  }
  const CommandOutcome bad = attune("report --db " + c.db + " --format pdf");
  EXPECT_EQ(bad.exit_code, 2);
}

// A calibration run the band left out (a slow node) is named in both reports and the status.
TEST_F(Report, ACalibrationRunTheBandLeftOutIsNamed) {
  const fs::path db = suite_dir() / "left-out";
  const std::string id = left_out_ledger(db);
  const std::string note =
      "calibration run 3 left out: a slow node? A run on other nodes replaced it";
  for (const std::string format : {"md", "html"}) {
    const CommandOutcome report =
        attune("report --db " + db.string() + " --campaign " + id + " --format " + format);
    ASSERT_EQ(report.exit_code, 0) << report.err;
    EXPECT_NE(report.out.find("band 3.00% (" + note + ")"), std::string::npos) << format;
  }
  const CommandOutcome status = attune("status --db " + db.string() + " --campaign " + id);
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("over 5 calibration runs; band 3.00% (set)"), std::string::npos)
      << status.out;
  EXPECT_NE(status.out.find("calibration run 3 (4830.0 tokens/s/GPU) left out of the band"),
            std::string::npos)
      << status.out;
}

TEST_F(Report, TheLeaderboardRefusesALedgerWhoseChainDoesNotVerify) {
  const Campaign& c = glm();
  const fs::path forged = suite_dir() / "forged";
  fs::copy(c.db, forged, fs::copy_options::recursive);
  {
    auto store = EventStore::open(forged.string());
    ASSERT_TRUE(store.ok()) << store.error();
    auto records = (*store)->read_raw(c.id);
    ASSERT_TRUE(records.ok());
    Envelope envelope = decode_envelope(records->front().bytes).value();
    std::get<CampaignOpened>(envelope.body).gpu_count = 16;  // a forged change
    ASSERT_TRUE((*store)->overwrite_raw_for_testing(c.id, 1, encode_envelope(envelope, true)).ok());
  }
  const std::string board = (suite_dir() / "forged-board").string();
  const CommandOutcome add = attune("leaderboard add --db " + forged.string() + " --campaign " +
                                    c.id + " --board " + board);
  EXPECT_EQ(add.exit_code, 1);
  EXPECT_NE(add.err.find("hash chain is broken"), std::string::npos) << add.err;
  EXPECT_FALSE(fs::exists(board)) << "nothing is written for a refused campaign";
}

TEST_F(Report, JsonOutputsOfTheViewsAndToolsCarryASchemaVersion) {
  const Campaign& c = glm();
  const std::string db = " --db " + c.db + " --campaign " + c.id;
  const std::string recipe =
      std::string(ATTUNE_SOURCE_DIR) + "/adapters/model/data/recipes/qwen3-30b-a3b-h100x16.sh";
  const fs::path curve = suite_dir() / "curve.txt";
  std::ofstream(curve) << "[10.5, 9.8, 9.1, 8.7, 8.4, 8.2, 8.0, 7.9, 7.8, 7.7, 7.6, 7.55]\n";
  const std::string board = (suite_dir() / "json-board").string();
  ASSERT_EQ(attune("leaderboard add" + db + " --board " + board).exit_code, 0);
  const std::vector<std::string> commands = {
      "status" + db + " --json",
      "status --db " + c.db + " --json",
      "replay" + db + " --json",
      "audit" + db + " --json",
      "runs" + db + " --json",
      "leaderboard add" + db + " --board " + board + " --json",
      "leaderboard show --board " + board + " --json",
      "key show --json",
      "campaign check " + c.example + " --json",
      "gate converge --baseline " + curve.string() + " --candidate " + curve.string() + " --json",
      "sim predict --model qwen3-30b-a3b --gpu h100 --gpus 16 --seq 4096 --gbs 256 --recipe " +
          recipe + " --json",
      "sim sweep --model qwen3-30b-a3b --gpu h100 --gpus 16 --seq 4096 --gbs 256 --recipe " +
          recipe + " --top 3 --json",
      "recipe show " + recipe + " --json",
      "sim calibrate --json"};
  for (const std::string& command : commands) {
    const CommandOutcome outcome = attune(command);
    ASSERT_EQ(outcome.exit_code, 0) << command << ": " << outcome.err;
    const json out = json::parse(outcome.out, nullptr, false);
    ASSERT_TRUE(out.is_object()) << command;
    EXPECT_TRUE(out.contains("schema_version")) << command;
  }
}

// `sim calibrate --explain ID` shows the recipe the model prices for one published row and the
// predicted breakdown; an unknown id is a one-line error.
TEST_F(Report, CalibrateExplainsOneRow) {
  const CommandOutcome row = attune("sim calibrate --explain mb-26.02-qwen3-30b-a3b-b200-8-fp8-mx");
  ASSERT_EQ(row.exit_code, 0) << row.err;
  EXPECT_NE(row.out.find("published    9691.0 tokens/s/GPU"), std::string::npos) << row.out;
  EXPECT_NE(row.out.find("--cuda-graph-modules moe_router moe_preprocess"), std::string::npos);
  EXPECT_NE(row.out.find("--micro-batch-size 1"), std::string::npos);
  EXPECT_NE(row.out.find("breakdown    (critical stage 0"), std::string::npos);
  // A setting the row asks for that the model does not price as a gain is named with the reason,
  // in lines of at most 100 columns: GPT-OSS's biased, clamped experts measured no gain from the
  // fused grouped MLP.
  const CommandOutcome oss =
      attune("sim calibrate --explain mb-26.08-gpt-oss-120b-gb200-64-fp8-mx");
  ASSERT_EQ(oss.exit_code, 0) << oss.err;
  EXPECT_NE(oss.out.find("\nnote         NVTE_CUTEDSL_FUSED_GROUPED_MLP=1 is priced at no gain: "
                         "experts with"),
            std::string::npos)
      << oss.out;
  std::istringstream lines(oss.out);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 100u) << line;
  const CommandOutcome unknown = attune("sim calibrate --explain no-such-row");
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.err.find("no row has that id"), std::string::npos) << unknown.err;
  EXPECT_EQ(std::count(unknown.err.begin(), unknown.err.end(), '\n'), 1);
}

// `sim predict` and `sim sweep` fit their text in 100 columns where layouts and stages are long:
// GLM-4.5 on 128 B200 (eight pipeline stages, layouts with uneven splits and a dispatcher), and
// DeepSeek-V3's published 26.08 GB300 recipe (virtual stages, MTP, CUDA graphs).
TEST_F(Report, SimPredictAndSweepFitOneHundredColumns) {
  const std::string glm =
      " --model glm-4.5 --gpu b200 --gpus 128 --seq 4096 --gbs 2048 --recipe glm-4.5-b200x128"
      " --stack slime";
  const std::vector<std::string> commands = {
      "sim predict" + glm, "sim sweep" + glm + " --top 5",
      "sim calibrate --explain mb-26.08-deepseek-v3-gb300-256-fp8-mx"};
  for (const std::string& command : commands) {
    const CommandOutcome outcome = attune(command);
    ASSERT_EQ(outcome.exit_code, 0) << command << ": " << outcome.err;
    std::istringstream lines(outcome.out);
    int count = 0;
    for (std::string line; std::getline(lines, line); ++count) {
      EXPECT_LE(line.size(), 100u) << command << ": " << line;
    }
    EXPECT_GT(count, 5) << command;
  }
  // The stage lines still give every part of the peak.
  const CommandOutcome predict = attune("sim predict" + glm);
  EXPECT_NE(predict.out.find("  stage 0: "), std::string::npos) << predict.out;
  EXPECT_NE(predict.out.find("           weights "), std::string::npos) << predict.out;
  EXPECT_NE(predict.out.find(", transient "), std::string::npos) << predict.out;
}

// `sim calibrate` prints one line of at most 100 columns per published row, and no two rows'
// shown ids are the same.
TEST_F(Report, CalibratePrintsOneLinePerRowWithin100Columns) {
  const CommandOutcome table = attune("sim calibrate");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  const CommandOutcome json_out = attune("sim calibrate --json");
  ASSERT_EQ(json_out.exit_code, 0) << json_out.err;
  const json parsed = json::parse(json_out.out, nullptr, false);
  ASSERT_TRUE(parsed.contains("rows"));
  std::size_t priced = 0;
  for (const json& row : parsed["rows"]) priced += row.contains("error_raw") ? 1 : 0;
  ASSERT_GT(priced, 200u);
  // The header, then one line per priced row up to the first empty line, then the summary.
  std::istringstream lines(table.out);
  std::string header;
  ASSERT_TRUE(std::getline(lines, header));
  EXPECT_TRUE(header.starts_with("row ")) << header;
  std::set<std::string> shown;
  std::size_t rows = 0;
  for (std::string line; std::getline(lines, line) && !line.empty();) {
    ++rows;
    EXPECT_TRUE(shown.insert(line.substr(0, line.find(' '))).second) << line;
  }
  EXPECT_EQ(rows, priced);
  // Columns are UTF-8 code points: a cut id ends in a three-byte ellipsis.
  const auto columns = [](const std::string& text) {
    return std::count_if(text.begin(), text.end(),
                         [](char ch) { return (static_cast<unsigned char>(ch) & 0xC0) != 0x80; });
  };
  std::istringstream all(table.out);
  for (std::string line; std::getline(all, line);) EXPECT_LE(columns(line), 100) << line;
}

// A ledger string that looks like markup stays text in the HTML and in the Markdown.
TEST_F(Report, LedgerStringsAreEscaped) {
  const fs::path db = suite_dir() / "hostile";
  const std::string id = profiled_ledger(db, "<script>alert(1)</script>");
  const CommandOutcome html = attune("report --db " + db.string() + " --campaign " + id);
  ASSERT_EQ(html.exit_code, 0) << html.err;
  EXPECT_EQ(html.out.find("<script>alert"), std::string::npos);
  EXPECT_NE(html.out.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  const CommandOutcome md =
      attune("report --db " + db.string() + " --campaign " + id + " --format md");
  EXPECT_EQ(md.out.find("<script>alert"), std::string::npos);
  EXPECT_NE(md.out.find("&lt;script&gt;"), std::string::npos);
}

TEST_F(Report, ProfiledRunsGetStackedStageBars) {
  const fs::path db = suite_dir() / "profiled";
  const std::string id = profiled_ledger(db);
  const CommandOutcome html = attune("report --db " + db.string() + " --campaign " + id);
  ASSERT_EQ(html.exit_code, 0) << html.err;
  EXPECT_NE(html.out.find("<svg class=\"stages\" data-profile-run=\"1\""), std::string::npos);
  // Stage 0: compute, two exposed kinds, host-bound and idle; stage 1: compute, tp, host, idle.
  const std::regex bar("<rect class=\"(compute|comm-[a-z_0-9]+|host|idle)\"");
  const auto bars = static_cast<std::size_t>(std::distance(
      std::sregex_iterator(html.out.begin(), html.out.end(), bar), std::sregex_iterator()));
  EXPECT_EQ(bars, 9u);
  EXPECT_NE(html.out.find("stage 0 ep_a2a exposed: 20.00 ms"), std::string::npos);
  EXPECT_EQ(data_runs(html.out).size(), 1u);
  // The chain is unkeyed, and the report says so rather than calling it verified.
  EXPECT_NE(html.out.find("chain unverifiable"), std::string::npos);
  const CommandOutcome md =
      attune("report --db " + db.string() + " --campaign " + id + " --format md");
  EXPECT_NE(md.out.find("| 0 | 100.00 | 70.00 | ep_a2a 20.00, pp_p2p 4.00 | 3.00 | 3.00 |"),
            std::string::npos)
      << md.out;
  // Nothing shipped yet: the report says the campaign has not finished.
  EXPECT_NE(html.out.find("nothing yet"), std::string::npos);
}

}  // namespace
}  // namespace attune
