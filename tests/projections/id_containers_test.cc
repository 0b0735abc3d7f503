// IdSet and IdMap behave as std::set and std::map of ids, whatever ids a ledger holds: dense ones
// from 1, repeats, and ids far beyond the others.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <limits>
#include <map>
#include <set>
#include <vector>

#include "projections/id_map.h"
#include "projections/id_set.h"

namespace attune {
namespace {

// Mostly small dense ids, sometimes a huge one.
rc::Gen<std::uint32_t> ids() {
  return rc::gen::weightedOneOf<std::uint32_t>(
      {{8, rc::gen::inRange<std::uint32_t>(0, 300)},
       {1, rc::gen::inRange<std::uint32_t>(1u << 16, 1u << 20)},
       {1, rc::gen::element<std::uint32_t>(std::numeric_limits<std::uint32_t>::max(),
                                           std::numeric_limits<std::uint32_t>::max() - 1)}});
}

RC_GTEST_PROP(IdSet, BehavesAsAnOrderedSet, ()) {
  const auto inserts = *rc::gen::container<std::vector<std::uint32_t>>(ids());
  IdSet set;
  std::set<std::uint32_t> model;
  for (const std::uint32_t id : inserts) RC_ASSERT(set.insert(id) == model.insert(id).second);
  RC_ASSERT(set.size() == model.size());
  RC_ASSERT(set.members() == std::vector<std::uint32_t>(model.begin(), model.end()));
  for (const std::uint32_t probe : *rc::gen::container<std::vector<std::uint32_t>>(ids())) {
    RC_ASSERT(set.contains(probe) == model.contains(probe));
  }
  // The same members inserted in another order make an equal set.
  IdSet reversed;
  for (auto it = inserts.rbegin(); it != inserts.rend(); ++it) reversed.insert(*it);
  RC_ASSERT(reversed == set);
}

RC_GTEST_PROP(IdMap, BehavesAsAnOrderedMap, ()) {
  const auto inserts = *rc::gen::container<std::vector<std::pair<std::uint32_t, int>>>(
      rc::gen::pair(ids(), rc::gen::arbitrary<int>()));
  IdMap<int> map;
  std::map<std::uint32_t, int> model;
  for (const auto& [id, value] : inserts) {
    RC_ASSERT(map.emplace(id, value) == model.emplace(id, value).second);
  }
  RC_ASSERT(map.size() == model.size());
  std::vector<std::pair<std::uint32_t, int>> visited;
  map.for_each([&](std::uint32_t id, int value) { visited.emplace_back(id, value); });
  const std::vector<std::pair<std::uint32_t, int>> expected(model.begin(), model.end());
  RC_ASSERT(visited == expected);
  for (const auto& [id, value] : model) {
    const int* found = map.find(id);
    RC_ASSERT(found != nullptr);
    RC_ASSERT(*found == value);
  }
}

TEST(IdSet, AHugeIdDoesNotGrowTheBitmap) {
  IdSet set;
  EXPECT_TRUE(set.insert(std::numeric_limits<std::uint32_t>::max()));
  EXPECT_TRUE(set.contains(std::numeric_limits<std::uint32_t>::max()));
  EXPECT_FALSE(set.contains(7));
  EXPECT_EQ(set.members(), std::vector<std::uint32_t>{std::numeric_limits<std::uint32_t>::max()});
}

}  // namespace
}  // namespace attune
