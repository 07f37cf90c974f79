#include "studies/torch_oom_message.hpp"

#include <cctype>

namespace allocsim {
namespace {

constexpr std::string_view kAnchor = "outofmemory.triedtoallocate";

// The message read without spaces, and its lower-case twin for finding the words.
struct Flat {
  std::string_view text;
  std::string_view low;

  std::optional<PrintedSize> size_at(std::size_t at) const {
    if (at >= text.size()) return std::nullopt;
    const std::optional<SizeAt> size = printed_size_at(text.substr(at));
    if (!size) return std::nullopt;
    return size->size;
  }
  // The size right after `label`, searched from `from`.
  std::optional<PrintedSize> after(std::string_view label, std::size_t from = 0) const {
    const std::size_t at = low.find(label, from);
    if (at == std::string_view::npos) return std::nullopt;
    return size_at(at + label.size());
  }
  // The size that ends right where `label` starts.
  std::optional<PrintedSize> before(std::string_view label) const {
    const std::size_t end = low.find(label);
    if (end == std::string_view::npos) return std::nullopt;
    return ending_at(end);
  }
  std::optional<PrintedSize> ending_at(std::size_t end) const {
    std::size_t start = end;
    while (start > 0 && is_alpha(text[start - 1]) && end - start < 5) --start;
    while (start > 0 && (is_digit(text[start - 1]) || text[start - 1] == '.')) --start;
    if (start < end && text[start] == '.') ++start;
    if (start == end || !is_digit(text[start])) return std::nullopt;
    const std::optional<SizeAt> size = printed_size_at(text.substr(start, end - start));
    if (!size || size->length != end - start) return std::nullopt;
    return size->size;
  }
};

std::optional<int> digits_value(std::string_view text) {
  int value = 0;
  std::size_t count = 0;
  for (; count < text.size() && count < 6 && is_digit(text[count]); ++count) value = value * 10 + (text[count] - '0');
  if (count == 0) return std::nullopt;
  return value;
}

void read_parenthesised(const Flat& flat, std::size_t open, TorchOomMessage& message) {
  const std::size_t close = flat.low.find(')', open);
  const std::size_t end = close == std::string_view::npos ? flat.low.size() : close;
  std::size_t part_start = open + 1;
  message.wording = TorchWording::reserved;
  bool any_wording = false;
  while (part_start < end) {
    std::size_t part_end = flat.low.find(';', part_start);
    if (part_end == std::string_view::npos || part_end > end) part_end = end;
    const std::string_view low = flat.low.substr(part_start, part_end - part_start);
    if (low.starts_with("gpu")) {
      message.gpu = digits_value(low.substr(3));
    } else if (const std::optional<SizeAt> size = printed_size_at(flat.text.substr(part_start, part_end - part_start))) {
      const std::string_view label = low.substr(size->length);
      if (label == "totalcapacity") message.total = size->size;
      if (label == "alreadyallocated") message.allocated = size->size;
      if (label == "free") message.free = size->size;
      if (label == "allowed") message.allowed = size->size;
      if (label.starts_with("reservedintotal")) {
        message.reserved_total = size->size;
        any_wording = true;
      }
      if (label == "cached") {
        message.cached = size->size;
        message.wording = TorchWording::cached;
        any_wording = true;
      }
    }
    part_start = part_end + 1;
  }
  if (!any_wording) message.wording = TorchWording::reserved;
}

void read_sentences(const Flat& flat, TorchOomMessage& message) {
  message.wording = TorchWording::unallocated;
  for (std::string_view capacity : {"hasatotalcapacityof", "hasatotalcapactyof"}) {
    const std::size_t at = flat.low.find(capacity);
    if (at == std::string_view::npos) continue;
    message.total = flat.size_at(at + capacity.size());
    std::size_t digits = at;
    while (digits > 0 && is_digit(flat.low[digits - 1])) --digits;
    if (digits < at) message.gpu = digits_value(flat.low.substr(digits));
    message.free = flat.after("ofwhich", at);
  }
  message.process_in_use = flat.after("thisprocesshas");
  for (std::size_t at = flat.low.find("process"); at != std::string_view::npos; at = flat.low.find("process", at + 1)) {
    std::size_t pid_end = at + 7;
    while (pid_end < flat.low.size() && is_digit(flat.low[pid_end])) ++pid_end;
    if (pid_end == at + 7 || flat.low.substr(pid_end, 3) != "has") continue;
    if (const std::optional<PrintedSize> memory = flat.size_at(pid_end + 3)) {
      message.processes.push_back({std::string(flat.text.substr(at + 7, pid_end - at - 7)), *memory});
    }
  }
  message.allowed = flat.before("allowed;");
  message.allocated = flat.after("oftheallocatedmemory");
  const std::size_t pools = flat.low.find("allocatedinprivatepools");
  if (pools != std::string_view::npos) {
    const std::size_t end = pools >= 2 && flat.low.substr(pools - 2, 2) == "is" ? pools - 2 : pools;
    message.private_pools = flat.ending_at(end);
  }
  message.unallocated = flat.before("isreservedbypytorchbutunallocated");
}

}  // namespace

std::string_view name_of(TorchWording wording) {
  switch (wording) {
    case TorchWording::cached: return "PyTorch up to 1.3 (`cached`)";
    case TorchWording::reserved: return "PyTorch 1.4 to 2.0 (`reserved in total by PyTorch`)";
    case TorchWording::unallocated: return "PyTorch 2.1 or later (`reserved by PyTorch but unallocated`)";
  }
  return "PyTorch";
}

std::optional<TorchOomMessage> read_torch_oom_message(std::string_view text) {
  const std::string joined = joined_without_spaces(pasted_lines(text));
  std::string low = joined;
  for (char& c : low) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::size_t anchor = low.find(kAnchor);
  if (anchor == std::string::npos) return std::nullopt;
  TorchOomMessage message;
  for (std::size_t at = anchor; at != std::string::npos; at = low.find(kAnchor, at + 1)) ++message.messages;
  const std::size_t next = low.find(kAnchor, anchor + 1);
  const std::size_t start = anchor + kAnchor.size();
  const std::size_t end = next == std::string::npos ? low.size() : next;
  const Flat flat{std::string_view(joined).substr(start, end - start), std::string_view(low).substr(start, end - start)};
  message.request = flat.size_at(0);
  const std::size_t open = flat.low.find('(');
  const bool parenthesised = open != std::string_view::npos && open < 24 &&
                             flat.low.substr(open, 4) == "(gpu";
  if (parenthesised) {
    read_parenthesised(flat, open, message);
  } else {
    read_sentences(flat, message);
  }
  return message;
}

}  // namespace allocsim
