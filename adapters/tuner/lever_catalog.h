// LeverCatalog: the expert tuner's levers as data (adapters/tuner/data/lever_catalog.toml,
// compiled in; a file of the same shape can replace it). Each lever names its coupled set, the
// candidate generator ("move") that realises it, its flags, its mechanism, the diagnosis tags under
// which it helps, its direction and a rough gain. The flags' objective classes are not here: they
// come from the gate's classification. Immutable after parsing; safe to share between threads.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "events/bottleneck.h"
#include "events/result.h"

namespace attune {

struct CatalogLever {
  std::string name;
  std::string set;   // the coupled set (core/data/lever_groups.toml) or the flag itself
  std::string move;  // layout, recompute, dispatcher, optimizer-offload, cuda-graphs, ...
  std::vector<std::string> flags;
  std::string mechanism;
  std::vector<Bottleneck> helps_when;  // the diagnoses under which it is tried first
  std::string direction;
  double rough_gain = 0.0;
};

struct LeverCatalog {
  std::vector<CatalogLever> levers;

  // The catalog levers of one move, in catalog order.
  std::vector<const CatalogLever*> of_move(std::string_view move) const;
};

// The moves the expert tuner implements; a catalog lever with another move is an error.
const std::vector<std::string>& known_moves();

// Errors name the source, the lever and what was expected.
Result<LeverCatalog> parse_lever_catalog(std::string_view text, std::string_view source_name);

// The compiled-in catalog. Asserts that it parses (a build defect otherwise).
const LeverCatalog& builtin_lever_catalog();

}  // namespace attune
