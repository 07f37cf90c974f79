#include "policies/common/address_ranges.hpp"

#include <algorithm>
#include <string>

#include "policies/common/flat_search.hpp"
#include "sim/error.hpp"

namespace allocsim {

Bytes AddressRanges::largest() const { return largest_.empty() ? 0 : *std::max_element(largest_.begin(), largest_.end()); }

std::optional<Range> AddressRanges::first_fit(Bytes size, Addr from) const {
  const Pos found = first_fit_at(size, from);
  if (found == end()) return std::nullopt;
  return (*this)[found];
}

AddressRanges::Pos AddressRanges::first_fit_at(Bytes size, Addr from) const {
  const Pos start = from == 0 ? begin() : lower_bound(from);  // a first fit searches from the start
  for (std::uint32_t at = start.leaf; at < order_.size(); ++at) {
    if (largest_[at] < size) continue;
    const Leaf& leaf = leaves_[order_[at]];
    for (std::uint32_t i = at == start.leaf ? start.index : 0; i < leaf.count; ++i) {
      if (leaf.size[i] >= size) return Pos{at, i};
    }
  }
  return end();
}

std::uint32_t AddressRanges::new_leaf() {
  if (!spare_.empty()) {
    const std::uint32_t id = spare_.back();
    spare_.pop_back();
    leaves_[id].count = 0;
    return id;
  }
  leaves_.emplace_back();
  return static_cast<std::uint32_t>(leaves_.size() - 1);
}

void AddressRanges::refresh(std::uint32_t at) {
  const Leaf& leaf = leaves_[order_[at]];
  first_[at] = leaf.addr[0];
  largest_[at] = *std::max_element(leaf.size.begin(), leaf.size.begin() + leaf.count);
}

void AddressRanges::split(std::uint32_t at) {
  const std::uint32_t id = new_leaf();  // may move leaves_: index it afresh below
  Leaf& full = leaves_[order_[at]];
  Leaf& upper = leaves_[id];
  const std::uint32_t keep = full.count / 2;
  upper.count = full.count - keep;
  std::copy(full.addr.begin() + keep, full.addr.begin() + full.count, upper.addr.begin());
  std::copy(full.size.begin() + keep, full.size.begin() + full.count, upper.size.begin());
  full.count = keep;
  order_.insert(order_.begin() + at + 1, id);
  first_.insert(first_.begin() + at + 1, 0);
  largest_.insert(largest_.begin() + at + 1, 0);
  refresh(at);
  refresh(at + 1);
}

void AddressRanges::insert(Range range) { insert(lower_bound(range.addr), range); }

void AddressRanges::insert(Pos at, Range range) {
  ++count_;
  if (order_.empty()) {
    const std::uint32_t id = new_leaf();
    leaves_[id].count = 1;
    leaves_[id].addr[0] = range.addr;
    leaves_[id].size[0] = range.size;
    order_.push_back(id);
    first_.push_back(range.addr);
    largest_.push_back(range.size);
    return;
  }
  // A range after a leaf's last one joins that leaf, not the next one's front.
  std::uint32_t leaf_at = at.leaf;
  std::uint32_t index = at.index;
  if (index == 0 && leaf_at > 0) {
    --leaf_at;
    index = leaves_[order_[leaf_at]].count;
  }
  if (leaves_[order_[leaf_at]].count == kLeaf) {
    split(leaf_at);
    const std::uint32_t kept = leaves_[order_[leaf_at]].count;
    if (index > kept) {
      ++leaf_at;
      index -= kept;
    }
  }
  Leaf& leaf = leaves_[order_[leaf_at]];
  std::copy_backward(leaf.addr.begin() + index, leaf.addr.begin() + leaf.count, leaf.addr.begin() + leaf.count + 1);
  std::copy_backward(leaf.size.begin() + index, leaf.size.begin() + leaf.count, leaf.size.begin() + leaf.count + 1);
  leaf.addr[index] = range.addr;
  leaf.size[index] = range.size;
  ++leaf.count;
  if (index == 0) first_[leaf_at] = range.addr;
  largest_[leaf_at] = std::max(largest_[leaf_at], range.size);
}

void AddressRanges::remove_leaf(std::uint32_t at) {
  spare_.push_back(order_[at]);
  order_.erase(order_.begin() + at);
  first_.erase(first_.begin() + at);
  largest_.erase(largest_.begin() + at);
}

// A leaf under a quarter full joins a neighbour that has room for it, so that leaves stay
// dense and a first fit scans few of them.
void AddressRanges::merge_sparse(std::uint32_t at) {
  const Leaf& leaf = leaves_[order_[at]];
  if (leaf.count >= kLeaf / 4) return;
  for (const std::uint32_t left : {at - 1, at}) {  // into the previous one, or the next into it
    if (at == 0 && left != at) continue;
    const std::uint32_t right = left + 1;
    if (right >= order_.size()) continue;
    Leaf& into = leaves_[order_[left]];
    const Leaf& from = leaves_[order_[right]];
    if (into.count + from.count > kLeaf * 3 / 4) continue;
    std::copy(from.addr.begin(), from.addr.begin() + from.count, into.addr.begin() + into.count);
    std::copy(from.size.begin(), from.size.begin() + from.count, into.size.begin() + into.count);
    into.count += from.count;
    largest_[left] = std::max(largest_[left], largest_[right]);
    remove_leaf(right);
    return;
  }
}

void AddressRanges::erase(Pos at) {
  --count_;
  Leaf& leaf = leaves_[order_[at.leaf]];
  const Bytes size = leaf.size[at.index];
  std::copy(leaf.addr.begin() + at.index + 1, leaf.addr.begin() + leaf.count, leaf.addr.begin() + at.index);
  std::copy(leaf.size.begin() + at.index + 1, leaf.size.begin() + leaf.count, leaf.size.begin() + at.index);
  --leaf.count;
  if (leaf.count == 0) {
    remove_leaf(at.leaf);
    return;
  }
  if (at.index == 0 || size == largest_[at.leaf]) refresh(at.leaf);
  merge_sparse(at.leaf);
}

void AddressRanges::set(Pos at, Range range) {
  Leaf& leaf = leaves_[order_[at.leaf]];
  const Bytes old = leaf.size[at.index];
  leaf.addr[at.index] = range.addr;
  leaf.size[at.index] = range.size;
  if (at.index == 0) first_[at.leaf] = range.addr;
  if (range.size >= largest_[at.leaf]) {
    largest_[at.leaf] = range.size;
  } else if (old == largest_[at.leaf]) {
    refresh(at.leaf);
  }
}

void AddressRanges::clear() {
  for (const std::uint32_t id : order_) spare_.push_back(id);
  order_.clear();
  first_.clear();
  largest_.clear();
  count_ = 0;
}

void AddressRanges::check() const {
  const auto fail = [](const std::string& what) { throw Error("address ranges: " + what); };
  if (first_.size() != order_.size() || largest_.size() != order_.size()) fail("the leaf arrays disagree");
  std::size_t count = 0;
  bool any = false;
  Addr previous = 0;
  for (std::uint32_t at = 0; at < order_.size(); ++at) {
    const Leaf& leaf = leaves_[order_[at]];
    if (leaf.count == 0 || leaf.count > kLeaf) fail("an empty or overfull leaf");
    if (first_[at] != leaf.addr[0]) fail("a leaf's first address is off");
    if (largest_[at] != *std::max_element(leaf.size.begin(), leaf.size.begin() + leaf.count)) {
      fail("a leaf's largest size is off");
    }
    for (std::uint32_t i = 0; i < leaf.count; ++i) {
      if (any && leaf.addr[i] <= previous) fail("ranges out of address order");
      any = true;
      previous = leaf.addr[i];
    }
    count += leaf.count;
  }
  if (count != count_) fail("the count is off");
}

}  // namespace allocsim
