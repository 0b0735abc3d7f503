// IdMap: values by run id, for the projections' bookkeeping. Ids of one campaign count up from 1,
// so most values live in a vector indexed by id, with no node to allocate per run; an id far
// beyond the others (a corrupt ledger's 4294967295) goes to an ordered map instead of growing the
// vector to match. A value type, compared by content.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace attune {

template <typename T>
class IdMap {
 public:
  // Adds `value` under `id`; false, and nothing changed, when `id` is already there.
  bool emplace(std::uint32_t id, T value) {
    if (find(id) != nullptr) return false;
    ++size_;
    if (id >= dense_limit()) return sparse_.emplace(id, std::move(value)).second;
    if (id >= dense_.size()) dense_.resize(static_cast<std::size_t>(id) + 1);
    dense_[id] = std::move(value);
    return true;
  }

  T* find(std::uint32_t id) {
    if (id < dense_.size() && dense_[id]) return &*dense_[id];
    if (sparse_.empty()) return nullptr;
    auto it = sparse_.find(id);
    return it == sparse_.end() ? nullptr : &it->second;
  }
  const T* find(std::uint32_t id) const { return const_cast<IdMap*>(this)->find(id); }

  std::size_t size() const { return size_; }

  // Calls visit(id, value) in increasing id order.
  template <typename Visit>
  void for_each(Visit visit) const {
    if (sparse_.empty()) {
      for (std::size_t id = 0; id < dense_.size(); ++id) {
        if (dense_[id]) visit(static_cast<std::uint32_t>(id), *dense_[id]);
      }
      return;
    }
    std::map<std::uint32_t, const T*> ordered;
    for (std::size_t id = 0; id < dense_.size(); ++id) {
      if (dense_[id]) ordered.emplace(static_cast<std::uint32_t>(id), &*dense_[id]);
    }
    for (const auto& [id, value] : sparse_) ordered.emplace(id, &value);
    for (const auto& [id, value] : ordered) visit(id, *value);
  }

  friend bool operator==(const IdMap& a, const IdMap& b) {
    if (a.size_ != b.size_) return false;
    bool equal = true;
    a.for_each([&](std::uint32_t id, const T& value) {
      const T* other = b.find(id);
      equal = equal && other != nullptr && *other == value;
    });
    return equal;
  }

 private:
  // Ids below this live in the vector: it grows with the map, never past 8 slots per value plus
  // a floor, so a forged id cannot make it huge.
  std::uint64_t dense_limit() const { return kDenseFloor + 8 * static_cast<std::uint64_t>(size_); }

  static constexpr std::uint64_t kDenseFloor = 1 << 16;
  std::vector<std::optional<T>> dense_;
  std::map<std::uint32_t, T> sparse_;
  std::size_t size_ = 0;
};

}  // namespace attune
