#include "adapters/world/process_groups.h"

#include <algorithm>

#include "events/assert.h"

namespace attune::sim {

const std::vector<GroupKind>& group_creation_order() {
  static const std::vector<GroupKind> order = {
      GroupKind::kDataParallel,
      GroupKind::kDataParallelWithCp,
      GroupKind::kContextParallel,
      GroupKind::kModelParallel,
      GroupKind::kTensorParallel,
      GroupKind::kPipelineParallel,
      GroupKind::kExpertParallel,
      GroupKind::kExpertTensorParallel,
      GroupKind::kExpertTensorAndModelParallel,
      GroupKind::kExpertDataParallel,
  };
  return order;
}

const char* group_desc(GroupKind kind) {
  switch (kind) {
    case GroupKind::kDataParallel:
      return "DATA_PARALLEL_GROUP";
    case GroupKind::kDataParallelWithCp:
      return "DATA_PARALLEL_GROUP_WITH_CP";
    case GroupKind::kContextParallel:
      return "CONTEXT_PARALLEL_GROUP";
    case GroupKind::kModelParallel:
      return "MODEL_PARALLEL_GROUP";
    case GroupKind::kTensorParallel:
      return "TENSOR_MODEL_PARALLEL_GROUP";
    case GroupKind::kPipelineParallel:
      return "PIPELINE_MODEL_PARALLEL_GROUP";
    case GroupKind::kExpertParallel:
      return "EXPERT_MODEL_PARALLEL_GROUP";
    case GroupKind::kExpertTensorParallel:
      return "EXPERT_TENSOR_PARALLEL_GROUP";
    case GroupKind::kExpertTensorAndModelParallel:
      return "EXPERT_TENSOR_AND_MODEL_PARALLEL_GROUP";
    case GroupKind::kExpertDataParallel:
      return "EXPERT_DATA_PARALLEL_GROUP";
  }
  return "undefined";
}

std::vector<int> group_members(const RankGrid& g, GroupKind kind, int rank) {
  const int s = g.stage_size();
  ATTUNE_ASSERT(g.tp * g.cp * g.dp == s && g.etp * g.ep * g.edp == s,
                "the parallel degrees multiply to the stage size");
  ATTUNE_ASSERT(rank >= 0 && rank < g.world, "the rank is in the world");
  const int stage = rank / s;
  const int q = rank % s;
  const int t = q % g.tp, c = (q / g.tp) % g.cp, d = q / (g.tp * g.cp);
  const int et = q % g.etp, e = (q / g.etp) % g.ep, ed = q / (g.etp * g.ep);
  std::vector<int> out;
  const auto dense = [&](int tt, int cc, int dd, int pp) {
    return pp * s + tt + g.tp * (cc + g.cp * dd);
  };
  const auto expert = [&](int tt, int ee, int dd) {
    return stage * s + tt + g.etp * (ee + g.ep * dd);
  };
  switch (kind) {
    case GroupKind::kDataParallel:
      for (int i = 0; i < g.dp; ++i) out.push_back(dense(t, c, i, stage));
      break;
    case GroupKind::kDataParallelWithCp:
      for (int i = 0; i < g.dp; ++i) {
        for (int j = 0; j < g.cp; ++j) out.push_back(dense(t, j, i, stage));
      }
      break;
    case GroupKind::kContextParallel:
      for (int j = 0; j < g.cp; ++j) out.push_back(dense(t, j, d, stage));
      break;
    case GroupKind::kModelParallel:
      for (int p = 0; p < g.pp; ++p) {
        for (int i = 0; i < g.tp; ++i) out.push_back(dense(i, c, d, p));
      }
      break;
    case GroupKind::kTensorParallel:
      for (int i = 0; i < g.tp; ++i) out.push_back(dense(i, c, d, stage));
      break;
    case GroupKind::kPipelineParallel:
      for (int p = 0; p < g.pp; ++p) out.push_back(p * s + q);
      break;
    case GroupKind::kExpertParallel:
      for (int i = 0; i < g.ep; ++i) out.push_back(expert(et, i, ed));
      break;
    case GroupKind::kExpertTensorParallel:
      for (int i = 0; i < g.etp; ++i) out.push_back(expert(i, e, ed));
      break;
    case GroupKind::kExpertTensorAndModelParallel:
      for (int i = 0; i < g.ep; ++i) {
        for (int j = 0; j < g.etp; ++j) out.push_back(expert(j, i, ed));
      }
      break;
    case GroupKind::kExpertDataParallel:
      for (int i = 0; i < g.edp; ++i) out.push_back(expert(et, e, i));
      break;
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::map<GroupKind, ProcessGroup> process_groups(const RankGrid& g, int rank) {
  std::map<GroupKind, ProcessGroup> groups;
  int offset = 1;
  for (const GroupKind kind : group_creation_order()) {
    int count = 0;
    int mine = -1;
    const std::vector<int> members = group_members(g, kind, rank);
    for (int r = 0; r < g.world; ++r) {
      const std::vector<int> of_r = group_members(g, kind, r);
      if (of_r.front() != r) continue;  // numbered once, by its lowest rank
      if (of_r.front() == members.front()) mine = count;
      ++count;
    }
    ATTUNE_ASSERT(mine >= 0, "every rank is in each of its groups");
    groups[kind] = ProcessGroup{std::to_string(offset + mine), group_desc(kind), members};
    offset += count;
  }
  return groups;
}

}  // namespace attune::sim
