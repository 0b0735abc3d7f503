// Rendering of run rows and economics (run_rows.h): text that fits a terminal, CSV and JSON.
#include <algorithm>
#include <array>
#include <locale>
#include <sstream>

#include <nlohmann/json.hpp>

#include "projections/number_format.h"
#include "projections/run_rows.h"
#include "projections/text_table.h"

namespace attune {
namespace {

constexpr std::size_t kMinChangeColumns = 12;

std::string optional_text(const std::optional<double>& value, int decimals) {
  return value ? format_fixed(*value, decimals) : "-";
}

std::string result_text(const RunRow& row) {
  if (row.tokens_per_s_per_gpu) return format_fixed(*row.tokens_per_s_per_gpu, 1);
  if (row.failure_class) return to_string(*row.failure_class);
  return "-";
}

std::string parent_text(const RunRow& row) {
  if (!row.parent) return "-";
  return *row.parent == 0 ? "base" : std::to_string(*row.parent);
}

std::string gain_text(const RunRow& row) {
  return row.gain_fraction ? format_signed_percent(*row.gain_fraction, 1) : "-";
}

std::string mfu_text(const std::optional<double>& mfu) {
  return mfu ? format_percent(*mfu, 1) : "-";
}

// The change in lines of at most `width` code points, broken at spaces.
std::vector<std::string> wrap_change(const std::string& text, std::size_t width) {
  std::vector<std::string> lines;
  std::istringstream wrapped(wrap_words(text, width, ""));
  for (std::string line; std::getline(wrapped, line);) lines.push_back(line);
  if (lines.empty()) lines.emplace_back();
  return lines;
}

std::string render_wide(std::span<const RunRow> rows) {
  TextTable table({{"run", Align::kRight},
                   {"purpose"},
                   {"parent", Align::kRight},
                   {"change"},
                   {"failure"},
                   {"tokens/s/GPU", Align::kRight},
                   {"TFLOP/s/GPU", Align::kRight},
                   {"MFU", Align::kRight},
                   {"GPU-h", Align::kRight},
                   {"verdict"},
                   {"gain", Align::kRight}});
  for (const RunRow& row : rows) {
    table.add_row({std::to_string(row.run_id) + (row.shipped ? "*" : ""), to_string(row.purpose),
                   parent_text(row), row.change, failure_text(row),
                   optional_text(row.tokens_per_s_per_gpu, 1), optional_text(row.tflops_per_gpu, 1),
                   mfu_text(row.mfu), format_fixed(row.gpu_hours, 1),
                   row.verdict ? to_string(*row.verdict) : "-", gain_text(row)});
  }
  return table.render();
}

}  // namespace

std::string render_runs_text(std::span<const RunRow> rows, std::size_t width, bool wrap) {
  std::string out = width == 0 ? render_wide(rows) : "";
  if (width != 0) {
    // Every column but the change, at its natural width, then the change in what is left.
    std::vector<std::array<std::string, 8>> cells;
    std::array<std::size_t, 8> widths{};
    const std::array<std::string, 8> headers{"run", "purpose", "from",    "tok/s/GPU",
                                             "MFU", "GPU-h",   "verdict", "gain"};
    for (std::size_t c = 0; c < headers.size(); ++c) widths[c] = headers[c].size();
    for (const RunRow& row : rows) {
      cells.push_back({std::to_string(row.run_id) + (row.shipped ? "*" : ""),
                       to_string(row.purpose), parent_text(row), result_text(row),
                       mfu_text(row.mfu), format_fixed(row.gpu_hours, 1),
                       row.verdict ? to_string(*row.verdict) : "-", gain_text(row)});
      for (std::size_t c = 0; c < headers.size(); ++c) {
        widths[c] = std::max(widths[c], display_width(cells.back()[c]));
      }
    }
    std::size_t used = 2 * headers.size();
    for (std::size_t w : widths) used += w;
    const std::size_t change_width =
        width > used + kMinChangeColumns ? width - used : kMinChangeColumns;
    TextTable table({{"run", Align::kRight},
                     {"purpose"},
                     {"from", Align::kRight},
                     {"change"},
                     {"tok/s/GPU", Align::kRight},
                     {"MFU", Align::kRight},
                     {"GPU-h", Align::kRight},
                     {"verdict"},
                     {"gain", Align::kRight}});
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const auto& c = cells[r];
      const std::string change = short_change(rows[r].change);
      std::vector<std::string> lines = wrap ? wrap_change(change, change_width)
                                            : std::vector{cut_to_width(change, change_width)};
      table.add_row({c[0], c[1], c[2], lines[0], c[3], c[4], c[5], c[6], c[7]});
      for (std::size_t l = 1; l < lines.size(); ++l) {
        table.add_row({"", "", "", lines[l], "", "", "", "", ""});
      }
    }
    out = table.render();
  }
  if (std::any_of(rows.begin(), rows.end(), [](const RunRow& r) { return r.shipped; })) {
    out += "* shipped\n";
  }
  return out;
}

std::string render_runs_csv(std::span<const RunRow> rows) {
  auto quoted = [](const std::string& text) {
    if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
    std::string out = "\"";
    for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
  };
  auto number = [](const std::optional<double>& value) {
    if (!value) return std::string();
    std::ostringstream out;
    out.imbue(std::locale::classic());
    out.precision(17);
    out << *value;
    return out.str();
  };
  std::string out =
      "run_id,purpose,parent_run_id,change,change_from_baseline,failure_class,"
      "tokens_per_s_per_gpu,tflops_per_gpu,mfu,gpu_hours,verdict,gain_fraction,profiled,"
      "shipped,failure_cause\r\n";
  for (const RunRow& row : rows) {
    out += std::to_string(row.run_id) + "," + to_string(row.purpose) + "," +
           (row.parent ? std::to_string(*row.parent) : "") + "," + quoted(row.change) + "," +
           quoted(row.change_from_baseline) + "," +
           (row.failure_class ? to_string(*row.failure_class) : "") + "," +
           number(row.tokens_per_s_per_gpu) + "," + number(row.tflops_per_gpu) + "," +
           number(row.mfu) + "," + number(row.gpu_hours) + "," +
           (row.verdict ? to_string(*row.verdict) : "") + "," + number(row.gain_fraction) + "," +
           (row.profiled ? "true" : "false") + "," + (row.shipped ? "true" : "false") + "," +
           (row.failure_class ? to_string(row.failure_cause) : "") + "\r\n";
  }
  return out;
}

nlohmann::json runs_to_json(std::span<const RunRow> rows) {
  nlohmann::json out = nlohmann::json::array();
  auto maybe = [](const auto& value) -> nlohmann::json {
    if (value) return *value;
    return nullptr;
  };
  for (const RunRow& row : rows) {
    out.push_back(
        {{"run_id", row.run_id},
         {"purpose", to_string(row.purpose)},
         {"parent_run_id", maybe(row.parent)},
         {"change", row.change},
         {"change_from_baseline", row.change_from_baseline},
         {"failure_class", row.failure_class ? nlohmann::json(to_string(*row.failure_class))
                                             : nlohmann::json(nullptr)},
         {"failure_cause", row.failure_class ? nlohmann::json(to_string(row.failure_cause))
                                             : nlohmann::json(nullptr)},
         {"tokens_per_s_per_gpu", maybe(row.tokens_per_s_per_gpu)},
         {"tflops_per_gpu", maybe(row.tflops_per_gpu)},
         {"mfu", maybe(row.mfu)},
         {"gpu_hours", row.gpu_hours},
         {"verdict",
          row.verdict ? nlohmann::json(to_string(*row.verdict)) : nlohmann::json(nullptr)},
         {"gain_fraction", maybe(row.gain_fraction)},
         {"profiled", row.profiled},
         {"shipped", row.shipped}});
  }
  return out;
}

nlohmann::json to_json(const Economics& e) {
  auto maybe = [](const std::optional<double>& value) -> nlohmann::json {
    if (value) return *value;
    return nullptr;
  };
  return {{"gpu_count", e.gpu_count},
          {"tuning_gpu_hours", e.tuning_gpu_hours},
          {"tuning_usd", maybe(e.tuning_usd)},
          {"baseline_tokens_per_s_per_gpu", e.baseline_tokens_per_s_per_gpu},
          {"shipped_tokens_per_s_per_gpu", e.shipped_tokens_per_s_per_gpu},
          {"shipped_is_baseline", e.shipped_is_baseline},
          {"baseline_mfu", maybe(e.baseline_mfu)},
          {"shipped_mfu", maybe(e.shipped_mfu)},
          {"baseline_usd_per_million_tokens", maybe(e.baseline_usd_per_million_tokens)},
          {"shipped_usd_per_million_tokens", maybe(e.shipped_usd_per_million_tokens)},
          {"payback_hours", maybe(e.payback_hours)}};
}

std::string render_economics_text(const Economics& e) {
  std::string out;
  if (e.baseline_mfu && e.shipped_mfu) {
    out += "mfu       " + format_percent(*e.baseline_mfu, 1) + " baseline, " +
           format_percent(*e.shipped_mfu, 1) + " shipped\n";
  }
  if (e.baseline_usd_per_million_tokens && e.shipped_usd_per_million_tokens) {
    out += "cost      $" + format_fixed(*e.baseline_usd_per_million_tokens, 3) +
           " per million tokens on the baseline, $" +
           format_fixed(*e.shipped_usd_per_million_tokens, 3) + " shipped\n";
  }
  out += "tuning    " + format_fixed(e.tuning_gpu_hours, 1) + " GPU-hours";
  if (e.tuning_usd) out += ", $" + format_fixed(*e.tuning_usd, 0);
  out += "\n";
  if (e.payback_hours) {
    out += "payback   " + format_fixed(*e.payback_hours, 1) + " hours of training on " +
           std::to_string(e.gpu_count) + " GPUs with the shipped recipe repay the tuning\n";
  } else {
    out += "payback   none: the baseline ships, so the tuning is not repaid\n";
  }
  return out;
}

}  // namespace attune
