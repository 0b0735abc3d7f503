// IdSet: a set of run or proposal ids. Ids of one campaign count up from 1, so most live in a
// bitmap indexed by id; an id far beyond the others (a corrupt ledger's 4294967295) goes to an
// ordered set instead of growing the bitmap to match. A value type, compared by content.
#pragma once

#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

namespace attune {

class IdSet {
 public:
  // Adds `id`; false when it was already there.
  bool insert(std::uint32_t id) {
    if (contains(id)) return false;
    ++size_;
    if (id >= dense_limit()) return sparse_.insert(id).second;
    const std::size_t word = id / 64;
    if (word >= bits_.size()) bits_.resize(word + 1, 0);
    bits_[word] |= std::uint64_t{1} << (id % 64);
    return true;
  }

  bool contains(std::uint32_t id) const {
    const std::size_t word = id / 64;
    if (word < bits_.size() && (bits_[word] & (std::uint64_t{1} << (id % 64))) != 0) return true;
    return !sparse_.empty() && sparse_.contains(id);
  }

  std::size_t size() const { return size_; }

  // The members in increasing order.
  std::vector<std::uint32_t> members() const {
    std::vector<std::uint32_t> out;
    out.reserve(size_);
    for (std::size_t word = 0; word < bits_.size(); ++word) {
      for (std::uint32_t bit = 0; bit < 64; ++bit) {
        if ((bits_[word] >> bit) & 1) out.push_back(static_cast<std::uint32_t>(word * 64 + bit));
      }
    }
    out.insert(out.end(), sparse_.begin(), sparse_.end());
    std::sort(out.begin(), out.end());
    return out;
  }

  friend bool operator==(const IdSet& a, const IdSet& b) {
    return a.size_ == b.size_ && a.members() == b.members();
  }

 private:
  // Ids below this live in the bitmap: it grows with the set, never past 8 bits per member
  // plus a floor, so a forged id cannot make it huge.
  std::uint64_t dense_limit() const { return kDenseFloor + 8 * static_cast<std::uint64_t>(size_); }

  static constexpr std::uint64_t kDenseFloor = 1 << 16;
  std::vector<std::uint64_t> bits_;
  std::set<std::uint32_t> sparse_;
  std::size_t size_ = 0;
};

}  // namespace attune
