#include "sim/block_log.hpp"

#include <algorithm>

namespace allocsim {

BlockLog::BlockLog(std::size_t max_spans_per_tenant) : max_spans_(max_spans_per_tenant) {}

TenantBlocks& BlockLog::tenant(std::size_t index) {
  if (tenants_.size() <= index) {
    tenants_.resize(index + 1);
    open_.resize(index + 1);
  }
  return tenants_[index];
}

void BlockLog::on_block(const BlockEvent& block) {
  tenant(block.tenant);
  switch (block.action) {
    case BlockAction::placed:
      place(block);
      break;
    case BlockAction::freed:
      end_block(block);
      break;
    case BlockAction::moved:  // a span ends where it was, the next starts where it is
      end_block(block);
      place(block);
      break;
  }
}

void BlockLog::place(const BlockEvent& block) {
  TenantBlocks& blocks = tenants_[block.tenant];
  std::vector<std::size_t>& by_id = open_[block.tenant].block_by_id;
  const std::size_t id = index_of(block.id);
  if (by_id.size() <= id) by_id.resize(id + 1, kStillLive);
  if (blocks.blocks.size() >= max_spans_) {
    ++blocks.dropped_blocks;
    return;
  }
  by_id[id] = blocks.blocks.size();
  blocks.blocks.push_back(BlockSpan{block.id, block.addr, block.size, block.requested, block.event, kStillLive,
                                    block.time, 0});
}

void BlockLog::end_block(const BlockEvent& block) {
  std::vector<std::size_t>& by_id = open_[block.tenant].block_by_id;
  const std::size_t id = index_of(block.id);
  if (id >= by_id.size() || by_id[id] == kStillLive) return;  // dropped past the bound
  BlockSpan& span = tenants_[block.tenant].blocks[by_id[id]];
  span.freed_event = block.event;
  span.freed = block.time;
  by_id[id] = kStillLive;
}

void BlockLog::on_segment(const SegmentEvent& segment) {
  TenantBlocks& blocks = tenant(segment.tenant);
  std::vector<std::size_t>& open = open_[segment.tenant].open_segments;
  if (segment.action == SegmentAction::alloc || segment.action == SegmentAction::map) {
    if (blocks.segments.size() >= max_spans_) {
      ++blocks.dropped_segments;
      return;
    }
    open.push_back(blocks.segments.size());
    blocks.segments.push_back(SegmentSpan{segment.addr, segment.bytes, segment.event, kStillLive, segment.time, 0,
                                          segment.action == SegmentAction::map});
    return;
  }
  // A free gives back one segment; an unmap the mapped bytes inside its range, which may be
  // part of a range mapped in one call: the span ends where the unmap took it, what is
  // left on either side stays open.
  const Addr end = segment.addr + segment.bytes;
  std::vector<SegmentSpan> left;
  std::erase_if(open, [&](std::size_t i) {
    SegmentSpan& span = blocks.segments[i];
    const Addr span_end = span.addr + span.bytes;
    const bool ends = segment.action == SegmentAction::free ? span.addr == segment.addr && span.bytes == segment.bytes
                                                            : span.addr < end && segment.addr < span_end;
    if (!ends) return false;
    if (segment.action == SegmentAction::unmap) {
      if (span.addr < segment.addr) left.push_back(SegmentSpan{span.addr, segment.addr - span.addr, span.reserved_event,
                                                               kStillLive, span.reserved, 0, true});
      if (end < span_end) left.push_back(SegmentSpan{end, span_end - end, span.reserved_event, kStillLive, span.reserved, 0, true});
      span.addr = std::max(span.addr, segment.addr);
      span.bytes = std::min(span_end, end) - span.addr;
    }
    span.released_event = segment.event;
    span.released = segment.time;
    return true;
  });
  for (const SegmentSpan& span : left) {
    if (blocks.segments.size() >= max_spans_) {
      ++blocks.dropped_segments;
      continue;
    }
    open.push_back(blocks.segments.size());
    blocks.segments.push_back(span);
  }
}

}  // namespace allocsim
