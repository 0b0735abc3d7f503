#include "adapters/tuner/lever_catalog.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace attune {

extern const char kLeverCatalogToml[];
extern const std::size_t kLeverCatalogToml_size;

namespace {

Result<std::vector<std::string>> strings(const toml::table& lever, const char* key,
                                         const std::string& where) {
  const toml::array* list = lever[key].as_array();
  if (list == nullptr) return make_error(where + ": '" + key + "' must be an array of strings");
  std::vector<std::string> out;
  for (const toml::node& item : *list) {
    const auto text = item.value<std::string>();
    if (!text) return make_error(where + ": '" + key + "' must be an array of strings");
    out.push_back(*text);
  }
  return out;
}

}  // namespace

std::vector<const CatalogLever*> LeverCatalog::of_move(std::string_view move) const {
  std::vector<const CatalogLever*> out;
  for (const CatalogLever& lever : levers) {
    if (lever.move == move) out.push_back(&lever);
  }
  return out;
}

const std::vector<std::string>& known_moves() {
  static const std::vector<std::string> moves = {
      "layout",          "recompute",  "dispatcher", "optimizer-offload", "cuda-graphs",
      "tp-comm-overlap", "dp-overlap", "ep-overlap", "micro-batch"};
  return moves;
}

Result<LeverCatalog> parse_lever_catalog(std::string_view text, std::string_view source_name) {
  const std::string source(source_name);
  toml::table root;
  try {
    root = toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    return make_error(source + ":" + std::to_string(e.source().begin.line) + ": " +
                      std::string(e.description()));
  }
  const toml::array* list = root["lever"].as_array();
  if (list == nullptr || list->empty()) {
    return make_error(source + ": expected [[lever]] tables");
  }
  LeverCatalog catalog;
  for (const toml::node& node : *list) {
    const toml::table* table = node.as_table();
    const int line = static_cast<int>(node.source().begin.line);
    const std::string where = source + ":" + std::to_string(line);
    if (table == nullptr) return make_error(where + ": a [[lever]] must be a table");
    CatalogLever lever;
    for (const char* key : {"name", "set", "move", "mechanism", "direction"}) {
      const auto value = (*table)[key].value<std::string>();
      if (!value || value->empty()) {
        return make_error(where + ": lever needs a non-empty string '" + key + "'");
      }
      const std::string k = key;
      if (k == "name") lever.name = *value;
      if (k == "set") lever.set = *value;
      if (k == "move") lever.move = *value;
      if (k == "mechanism") lever.mechanism = *value;
      if (k == "direction") lever.direction = *value;
    }
    const auto& moves = known_moves();
    if (std::find(moves.begin(), moves.end(), lever.move) == moves.end()) {
      return make_error(where + ": lever '" + lever.name + "' has move '" + lever.move +
                        "'; expected one of layout, recompute, dispatcher, optimizer-offload, "
                        "cuda-graphs, tp-comm-overlap, dp-overlap, ep-overlap, micro-batch");
    }
    auto flags = strings(*table, "flags", where + ": lever '" + lever.name + "'");
    if (!flags.ok()) return make_error(flags.error());
    lever.flags = std::move(flags).value();
    auto tags = strings(*table, "helps_when", where + ": lever '" + lever.name + "'");
    if (!tags.ok()) return make_error(tags.error());
    for (const std::string& tag : tags.value()) {
      const std::optional<Bottleneck> bottleneck = bottleneck_of_tag(tag);
      if (!bottleneck) {
        return make_error(where + ": lever '" + lever.name + "' helps_when '" + tag +
                          "' is not a diagnosis tag (ep_a2a, ep_a2a_cross_node, tp_comm, "
                          "cp_comm, pp_p2p, bubble, dp_comm, optimizer, optimizer_offload, "
                          "recompute, host, compute, memory_short)");
      }
      lever.helps_when.push_back(*bottleneck);
    }
    const auto gain = (*table)["rough_gain"].value<double>();
    if (!gain || *gain < 0 || *gain > 10) {
      return make_error(where + ": lever '" + lever.name +
                        "' needs 'rough_gain', a fraction between 0 and 10");
    }
    lever.rough_gain = *gain;
    for (const CatalogLever& other : catalog.levers) {
      if (other.name == lever.name) {
        return make_error(where + ": lever '" + lever.name + "' is listed twice");
      }
    }
    catalog.levers.push_back(std::move(lever));
  }
  return catalog;
}

const LeverCatalog& builtin_lever_catalog() {
  static const LeverCatalog catalog = [] {
    auto parsed = parse_lever_catalog(std::string_view(kLeverCatalogToml, kLeverCatalogToml_size),
                                      "lever_catalog.toml");
    if (!parsed.ok()) {
      std::fprintf(stderr, "attune: built-in lever catalog is broken: %s\n",
                   parsed.error().c_str());
      std::abort();
    }
    return std::move(parsed).value();
  }();
  return catalog;
}

}  // namespace attune
