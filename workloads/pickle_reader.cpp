#include "workloads/pickle_reader.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "sim/error.hpp"
#include "workloads/python_repr.hpp"

namespace allocsim {
namespace {

using nlohmann::json;

// An opcode that would make something other than plain data, and what it would make.
struct Refused {
  unsigned char code;
  const char* name;
  const char* what;
};
constexpr Refused kRefused[] = {
    {'c', "GLOBAL", "a global"},
    {0x93, "STACK_GLOBAL", "a global"},
    {'R', "REDUCE", "a call"},
    {'b', "BUILD", "an object's state"},
    {0x81, "NEWOBJ", "an object"},
    {0x92, "NEWOBJ_EX", "an object"},
    {'i', "INST", "an object"},
    {'o', "OBJ", "an object"},
    {'P', "PERSID", "a persistent id"},
    {'Q', "BINPERSID", "a persistent id"},
    {0x82, "EXT1", "an extension"},
    {0x83, "EXT2", "an extension"},
    {0x84, "EXT4", "an extension"},
    {0x8f, "EMPTY_SET", "a set"},
    {0x90, "ADDITEMS", "a set"},
    {0x91, "FROZENSET", "a set"},
    {0x96, "BYTEARRAY8", "a bytearray"},
    {0x97, "NEXT_BUFFER", "an out-of-band buffer"},
    {0x98, "READONLY_BUFFER", "an out-of-band buffer"},
};

// Protocol 0 and 1 text opcodes: harmless, but no snapshot writer uses them.
struct Unread {
  unsigned char code;
  const char* name;
};
constexpr Unread kUnread[] = {{'I', "INT"},  {'L', "LONG"}, {'S', "STRING"}, {'V', "UNICODE"}, {'F', "FLOAT"},
                              {'p', "PUT"},  {'g', "GET"},  {'d', "DICT"},   {'l', "LIST"}};

// A value while decoding: containers hold node indices, so that a memo get shares the
// container it names, as Python's does (it is filled after it is memoized).
using Kind = PickleGraph::Kind;
using Node = PickleGraph::Node;

// Whether `text` is UTF-8 as Python's 'surrogatepass' decoder takes it (surrogates allowed).
bool is_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    std::size_t extra = 0;
    std::uint32_t point = 0;
    if (lead < 0x80) {
      ++i;
      continue;
    } else if (lead >= 0xc2 && lead <= 0xdf) {
      extra = 1, point = lead & 0x1f;
    } else if (lead >= 0xe0 && lead <= 0xef) {
      extra = 2, point = lead & 0x0f;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      extra = 3, point = lead & 0x07;
    } else {
      return false;
    }
    if (i + extra >= text.size()) return false;
    for (std::size_t k = 1; k <= extra; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0) != 0x80) return false;
      point = (point << 6) | (next & 0x3f);
    }
    if ((extra == 2 && point < 0x800) || (extra == 3 && (point < 0x10000 || point > 0x10ffff))) return false;
    i += extra + 1;
  }
  return true;
}

class PickleDecoder {
 public:
  PickleDecoder(std::string_view bytes, const std::string& name) : in_(bytes), name_(name) {}

  PickleGraph run() {
    nodes_.reserve(in_.size() / 8);  // fewer regrowths of the node array; only pages written cost memory
    while (true) {
      op_at_ = at_;
      const auto code = static_cast<unsigned char>(take(1, "an opcode")[0]);
      if (step(code)) break;
    }
    if (stack_.empty()) fail("not a pickle: STOP with nothing on the stack");
    check_tree(stack_.back());
    const std::uint64_t budget = 64 * static_cast<std::uint64_t>(in_.size()) + (1u << 20);
    return PickleGraph(std::move(nodes_), stack_.back(), budget, name_ + ": byte " + std::to_string(op_at_));
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw Error(name_ + ": byte " + std::to_string(op_at_) + ": " + why);
  }

  std::string_view take(std::uint64_t count, const char* what) {
    if (count > in_.size() - at_) {
      fail("not a pickle: truncated: " + std::string(what) + " needs " + std::to_string(count) + " bytes, " +
           std::to_string(in_.size() - at_) + " left");
    }
    const std::string_view part = in_.substr(at_, static_cast<std::size_t>(count));
    at_ += static_cast<std::size_t>(count);
    return part;
  }
  std::uint64_t little_endian(int bytes, const char* what) {
    const std::string_view part = take(static_cast<std::uint64_t>(bytes), what);
    std::uint64_t value = 0;
    for (int i = bytes - 1; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(part[static_cast<std::size_t>(i)]);
    return value;
  }

  std::uint32_t add(json scalar) {
    nodes_.push_back(Node{Kind::scalar, std::move(scalar), {}});
    return static_cast<std::uint32_t>(nodes_.size() - 1);
  }
  std::uint32_t add(Kind kind, std::vector<std::uint32_t> items = {}) {
    nodes_.push_back(Node{kind, json(), std::move(items)});
    return static_cast<std::uint32_t>(nodes_.size() - 1);
  }
  void push(std::uint32_t node) { stack_.push_back(node); }
  void push(json scalar) { push(add(std::move(scalar))); }

  // The lowest stack position the current opcode may reach: the last MARK's.
  std::size_t fence() const { return marks_.empty() ? 0 : marks_.back(); }
  std::uint32_t pop(const char* op) {
    if (stack_.size() <= fence()) fail(std::string("not a pickle: stack underflow at ") + op);
    const std::uint32_t top = stack_.back();
    stack_.pop_back();
    return top;
  }
  std::uint32_t top(const char* op) {
    if (stack_.size() <= fence()) fail(std::string("not a pickle: stack underflow at ") + op);
    return stack_.back();
  }
  // The items since the last MARK, which is removed; they stay on the stack until the
  // caller has read them and cut it (cut_to), so that no vector is made per container.
  std::size_t pop_mark(const char* op) {
    if (marks_.empty()) fail(std::string("not a pickle: ") + op + " without a MARK");
    const std::size_t mark = marks_.back();
    marks_.pop_back();
    return mark;
  }
  std::span<const std::uint32_t> since(std::size_t mark) const { return std::span(stack_).subspan(mark); }
  void cut_to(std::size_t mark) { stack_.resize(mark); }
  // What is below the items of a popped MARK, as top() would see it once they are gone.
  std::uint32_t top_below(std::size_t mark, const char* op) const {
    if (mark <= fence()) fail(std::string("not a pickle: stack underflow at ") + op);
    return stack_[mark - 1];
  }
  Node& container(std::uint32_t node, Kind kind, const char* op) {
    if (nodes_[node].kind != kind) {
      fail(std::string("not a pickle: ") + op + " into something that is not a " + (kind == Kind::dict ? "dict" : "list"));
    }
    return nodes_[node];
  }
  void set_items(std::uint32_t dict, std::span<const std::uint32_t> pairs, const char* op) {
    if (pairs.size() % 2 != 0) fail(std::string("not a pickle: ") + op + " with an odd number of items");
    Node& target = container(dict, Kind::dict, op);
    for (std::size_t i = 0; i < pairs.size(); i += 2) {
      const json& key = nodes_[pairs[i]].scalar;
      if (nodes_[pairs[i]].kind != Kind::scalar || !(key.is_string() || key.is_number_integer())) {
        fail(std::string("a dict key that is not a str or an int (") + op + "): a snapshot's keys are names");
      }
    }
    target.items.insert(target.items.end(), pairs.begin(), pairs.end());
  }
  // The memo: indices below the input's size (every pickler's: one per put) in a vector,
  // any other in a map, so that a hostile index costs no memory.
  static constexpr std::uint32_t kUnset = ~std::uint32_t{0};
  void memo_put(std::uint64_t index) {
    const std::uint32_t node = top("a memo put");
    if (index < in_.size()) {
      if (index >= memo_.size()) memo_.resize(std::min(std::max<std::size_t>(index + 1, 2 * memo_.size()), in_.size()), kUnset);
      memo_count_ += memo_[index] == kUnset;
      memo_[index] = node;
    } else {
      memo_count_ += far_memo_.insert_or_assign(index, node).second;
    }
  }
  void memo_get(std::uint64_t index) {
    std::uint32_t node = kUnset;
    if (index < memo_.size()) {
      node = memo_[index];
    } else if (const auto found = far_memo_.find(index); found != far_memo_.end()) {
      node = found->second;
    }
    if (node == kUnset) fail("not a pickle: memo " + std::to_string(index) + " was never put");
    push(node);
  }
  void text(std::uint64_t length, const char* op) {
    const std::string_view bytes = take(length, op);
    if (!is_utf8(bytes)) fail(std::string("not a pickle: ") + op + " is not UTF-8");
    push(json(std::string(bytes)));
  }
  void bytes(std::uint64_t length, const char* op) {
    const std::string_view part = take(length, op);
    push(json::binary(std::vector<std::uint8_t>(part.begin(), part.end())));
  }
  // LONG1/LONG4: little-endian two's complement of any length; 64 bits is what we keep.
  void long_int(std::uint64_t length, const char* op) {
    const std::string_view part = take(length, op);
    std::size_t n = part.size();
    if (n == 0) return push(json(std::int64_t{0}));
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(part[i]); };
    const bool negative = (byte(n - 1) & 0x80) != 0;
    const unsigned char fill = negative ? 0xff : 0x00;
    while (n > 1 && byte(n - 1) == fill && (byte(n - 2) & 0x80) == (fill & 0x80)) --n;  // minimal form
    std::uint64_t bits = 0;
    const std::size_t low = std::min<std::size_t>(n, 8);
    for (std::size_t i = low; i-- > 0;) bits = (bits << 8) | byte(i);
    if (n <= 8) {
      if (negative && n < 8) bits |= ~std::uint64_t{0} << (8 * n);  // sign-extend
      return push(json(static_cast<std::int64_t>(bits)));
    }
    if (n == 9 && byte(8) == 0) return push(bits > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())
                                                 ? json(bits)
                                                 : json(static_cast<std::int64_t>(bits)));
    fail(std::string("an int of ") + std::to_string(part.size()) + " bytes (" + op +
         ") does not fit 64 bits: a snapshot's numbers do");
  }

  // What a refused opcode would have made, named where the pickle says: the global's
  // module and name, the persistent id.
  std::string refused_detail(unsigned char code, const char* what) {
    const auto text_at = [&](std::size_t from_top) -> const json* {
      if (stack_.size() <= fence() + from_top) return nullptr;
      const Node& node = nodes_[stack_[stack_.size() - 1 - from_top]];
      return node.kind == Kind::scalar ? &node.scalar : nullptr;
    };
    if (code == 'c') {  // GLOBAL: "module\nname\n" follow the opcode
      const std::string_view rest = in_.substr(at_);
      const auto first = rest.find('\n');
      const auto second = first == std::string_view::npos ? first : rest.find('\n', first + 1);
      if (second != std::string_view::npos) {
        return "global " + printable(rest.substr(0, first)) + "." + printable(rest.substr(first + 1, second - first - 1));
      }
    } else if (code == 0x93) {  // STACK_GLOBAL: module and name on the stack
      const json* name = text_at(0);
      const json* module = text_at(1);
      if (name && module && name->is_string() && module->is_string()) {
        return "global " + printable(module->get<std::string>()) + "." + printable(name->get<std::string>());
      }
    } else if (code == 'Q') {  // BINPERSID: the id on the stack
      if (const json* id = text_at(0)) return "persistent id " + shown(*id);
    } else if (code == 'P') {  // PERSID: the id as a line of text
      const std::string_view rest = in_.substr(at_);
      return "persistent id " + shown(json(std::string(rest.substr(0, std::min(rest.find('\n'), rest.size())))));
    }
    return what;
  }

  // One opcode; true at STOP.
  bool step(unsigned char code) {
    switch (code) {
      case 0x80: {  // PROTO
        const auto protocol = static_cast<unsigned char>(take(1, "PROTO")[0]);
        if (protocol > 5) fail("pickle protocol " + std::to_string(protocol) + " is not supported (2 to 5 are)");
        return false;
      }
      case 0x95: take(8, "FRAME"); return false;  // framing only groups opcodes
      case '.': return true;                      // STOP
      case '}': push(add(Kind::dict)); return false;
      case ']': push(add(Kind::list)); return false;
      case ')': push(add(Kind::tuple)); return false;
      case '(': marks_.push_back(stack_.size()); return false;
      case '0': pop("POP"); return false;
      case '1': cut_to(pop_mark("POP_MARK")); return false;
      case '2': push(top("DUP")); return false;
      case 's': {  // SETITEM
        const std::uint32_t value = pop("SETITEM");
        const std::uint32_t key = pop("SETITEM");
        const std::uint32_t pair[] = {key, value};
        set_items(top("SETITEM"), pair, "SETITEM");
        return false;
      }
      case 'u': {  // SETITEMS
        const std::size_t mark = pop_mark("SETITEMS");
        const std::uint32_t dict = top_below(mark, "SETITEMS");
        set_items(dict, since(mark), "SETITEMS");
        cut_to(mark);
        return false;
      }
      case 'a': {  // APPEND
        const std::uint32_t item = pop("APPEND");
        container(top("APPEND"), Kind::list, "APPEND").items.push_back(item);
        return false;
      }
      case 'e': {  // APPENDS
        const std::size_t mark = pop_mark("APPENDS");
        Node& list = container(top_below(mark, "APPENDS"), Kind::list, "APPENDS");
        list.items.insert(list.items.end(), since(mark).begin(), since(mark).end());
        cut_to(mark);
        return false;
      }
      case 't': {
        const std::size_t mark = pop_mark("TUPLE");
        std::vector<std::uint32_t> items(since(mark).begin(), since(mark).end());
        cut_to(mark);
        push(add(Kind::tuple, std::move(items)));
        return false;
      }
      case 0x85: case 0x86: case 0x87: {  // TUPLE1, TUPLE2, TUPLE3
        std::vector<std::uint32_t> items(code - 0x84u);
        for (std::size_t i = items.size(); i-- > 0;) items[i] = pop("TUPLEn");
        push(add(Kind::tuple, std::move(items)));
        return false;
      }
      case 'J': push(json(static_cast<std::int64_t>(static_cast<std::int32_t>(little_endian(4, "BININT"))))); return false;
      case 'K': push(json(static_cast<std::int64_t>(little_endian(1, "BININT1")))); return false;
      case 'M': push(json(static_cast<std::int64_t>(little_endian(2, "BININT2")))); return false;
      case 0x8a: long_int(little_endian(1, "LONG1"), "LONG1"); return false;
      case 0x8b: {
        const auto length = static_cast<std::int32_t>(little_endian(4, "LONG4"));
        if (length < 0) fail("not a pickle: LONG4 with a negative length");
        long_int(static_cast<std::uint64_t>(length), "LONG4");
        return false;
      }
      case 'G': {  // BINFLOAT: big-endian
        const std::string_view part = take(8, "BINFLOAT");
        std::uint64_t bits = 0;
        for (const char c : part) bits = (bits << 8) | static_cast<unsigned char>(c);
        double value = 0;
        std::memcpy(&value, &bits, sizeof value);  // std::bit_cast, which LLVM 14's libc++ (the wasm build's) lacks
        push(json(value));
        return false;
      }
      case 0x8c: text(little_endian(1, "SHORT_BINUNICODE"), "SHORT_BINUNICODE"); return false;
      case 'X': text(little_endian(4, "BINUNICODE"), "BINUNICODE"); return false;
      case 0x8d: text(little_endian(8, "BINUNICODE8"), "BINUNICODE8"); return false;
      case 'U': text(little_endian(1, "SHORT_BINSTRING"), "SHORT_BINSTRING"); return false;
      case 'T': {
        const auto length = static_cast<std::int32_t>(little_endian(4, "BINSTRING"));
        if (length < 0) fail("not a pickle: BINSTRING with a negative length");
        text(static_cast<std::uint64_t>(length), "BINSTRING");
        return false;
      }
      case 'C': bytes(little_endian(1, "SHORT_BINBYTES"), "SHORT_BINBYTES"); return false;
      case 'B': bytes(little_endian(4, "BINBYTES"), "BINBYTES"); return false;
      case 0x8e: bytes(little_endian(8, "BINBYTES8"), "BINBYTES8"); return false;
      case 'N': push(json(nullptr)); return false;
      case 0x88: push(json(true)); return false;
      case 0x89: push(json(false)); return false;
      case 0x94: memo_put(memo_count_); return false;  // MEMOIZE: the memo's length
      case 'q': memo_put(little_endian(1, "BINPUT")); return false;
      case 'r': memo_put(little_endian(4, "LONG_BINPUT")); return false;
      case 'h': memo_get(little_endian(1, "BINGET")); return false;
      case 'j': memo_get(little_endian(4, "LONG_BINGET")); return false;
      default: break;
    }
    for (const Refused& refused : kRefused) {
      if (refused.code == code) {
        fail(std::string("opcode ") + refused.name + ": refused " + refused_detail(code, refused.what) +
             ": a memory snapshot is plain data");
      }
    }
    for (const Unread& unread : kUnread) {
      if (unread.code == code) {
        fail(std::string("opcode ") + unread.name +
             " (protocol 0 text) is not read: a snapshot is written with protocol 2 or later");
      }
    }
    static constexpr char kHex[] = "0123456789abcdef";
    fail(std::string("not a pickle: unknown opcode 0x") + kHex[code >> 4] + kHex[code & 15]);
  }

  // The graph must be a tree's: no container inside itself, at most kMaxPickleDepth
  // containers deep. Each node is walked once (a shared one keeps its height), iteratively.
  void check_tree(std::uint32_t root) {
    enum : std::uint8_t { unseen, open, done };
    std::vector<std::uint8_t> state(nodes_.size(), unseen);
    std::vector<std::uint32_t> height(nodes_.size(), 0);  // containers on the deepest path from here
    struct Frame {
      std::uint32_t node;
      std::size_t next = 0;
    };
    std::vector<Frame> path;
    const auto visit = [&](std::uint32_t node) {
      if (nodes_[node].kind == Kind::scalar || state[node] == done) return;
      if (state[node] == open) fail("a container inside itself: a snapshot is a tree");
      state[node] = open;
      path.push_back(Frame{node});
    };
    visit(root);
    while (!path.empty()) {
      Frame& frame = path.back();
      const Node& value = nodes_[frame.node];
      if (frame.next < value.items.size()) {
        visit(value.items[frame.next++]);  // a dict's keys are scalars: visiting them is a no-op
        continue;
      }
      std::uint32_t below = 0;
      for (const std::uint32_t item : value.items) below = std::max(below, height[item]);
      height[frame.node] = below + 1;
      if (height[frame.node] > kMaxPickleDepth) {
        fail("nested deeper than " + std::to_string(kMaxPickleDepth) + " levels: a snapshot is shallow");
      }
      state[frame.node] = done;
      path.pop_back();
    }
  }

  std::string_view in_;
  const std::string& name_;
  std::size_t at_ = 0;
  std::size_t op_at_ = 0;
  std::vector<Node> nodes_;
  std::vector<std::uint32_t> stack_;
  std::vector<std::size_t> marks_;
  std::vector<std::uint32_t> memo_;                             // by index, kUnset where none
  std::unordered_map<std::uint64_t, std::uint32_t> far_memo_;  // indices past the input's size
  std::size_t memo_count_ = 0;                                 // distinct indices put
};

}  // namespace

PickleGraph decode_pickle(std::string_view bytes, const std::string& name) { return PickleDecoder(bytes, name).run(); }

json read_pickle(std::string_view bytes, const std::string& name) { return decode_pickle(bytes, name).root().to_json(); }

// The subtree as one JSON tree, walked with an explicit stack (check_tree bounded its
// depth). Shared nodes are copied each time they appear, within the budget.
json PickleGraph::to_json(std::uint32_t root) const {
  std::uint64_t spent = 0;
  struct Open {
    std::uint32_t node;
    json* out;
    std::size_t next = 0;
  };
  json result;
  std::vector<Open> open;
  // Fills `out` with node's value: a scalar now, a container as a new open frame.
  const auto start = [&](std::uint32_t index, json& out) {
    const Node& value = nodes_[index];
    ++spent;
    if (value.kind == Kind::scalar) {
      if (value.scalar.is_string()) spent += value.scalar.get_ref<const std::string&>().size();
      if (value.scalar.is_binary()) spent += value.scalar.get_binary().size();
      out = value.scalar;
    } else if (value.kind == Kind::dict) {
      out = json::object();
      open.push_back(Open{index, &out});
    } else {
      out = json::array();
      out.get_ref<json::array_t&>().reserve(value.items.size());  // children's addresses stay put
      open.push_back(Open{index, &out});
    }
    if (spent > budget_) {
      throw Error(where_ + ": shared references expand beyond " + std::to_string(budget_) + " values and bytes");
    }
  };
  start(root, result);
  while (!open.empty()) {
    Open& frame = open.back();
    const Node& value = nodes_[frame.node];
    if (frame.next >= value.items.size()) {
      open.pop_back();
      continue;
    }
    if (value.kind == Kind::dict) {
      const json& key = nodes_[value.items[frame.next]].scalar;
      const std::uint32_t item = value.items[frame.next + 1];
      frame.next += 2;
      json& slot = (*frame.out)[key.is_string() ? key.get<std::string>() : key.dump()];
      start(item, slot);
    } else {
      const std::uint32_t item = value.items[frame.next++];
      frame.out->push_back(json());
      start(item, frame.out->back());
    }
  }
  return result;
}

PickleValue PickleGraph::root() const { return PickleValue(this, root_); }

const json& PickleValue::scalar() const {
  static const json none;
  if (!graph_) return none;
  const PickleGraph::Node& node = graph_->node(node_);
  return node.kind == Kind::scalar ? node.scalar : none;
}

std::size_t PickleValue::size() const {
  if (!graph_) return 0;
  const PickleGraph::Node& node = graph_->node(node_);
  if (node.kind == Kind::scalar) return 0;
  return node.kind == Kind::dict ? node.items.size() / 2 : node.items.size();
}

PickleValue PickleValue::operator[](std::size_t index) const { return PickleValue(graph_, graph_->node(node_).items[index]); }

namespace {
bool key_is(const json& key, std::string_view name) {
  if (key.is_string()) return key.get_ref<const std::string&>() == name;
  return key.dump() == name;  // an int key, by its decimal text
}
}  // namespace

PickleValue PickleValue::get(std::string_view key) const {
  if (!is_object()) return PickleValue();
  const auto& items = graph_->node(node_).items;
  for (std::size_t i = items.size(); i >= 2; i -= 2) {  // the last of equal keys, as a dict keeps
    if (key_is(graph_->node(items[i - 2]).scalar, key)) return PickleValue(graph_, items[i - 1]);
  }
  return PickleValue();
}

bool PickleValue::contains(std::string_view key) const {
  if (!is_object()) return false;
  const auto& items = graph_->node(node_).items;
  for (std::size_t i = 0; i < items.size(); i += 2) {
    if (key_is(graph_->node(items[i]).scalar, key)) return true;
  }
  return false;
}

std::vector<std::pair<std::string, PickleValue>> PickleValue::items() const {
  std::vector<std::pair<std::string, PickleValue>> out;
  if (!is_object()) return out;
  const auto& items = graph_->node(node_).items;
  for (std::size_t i = 0; i < items.size(); i += 2) {
    const json& key = graph_->node(items[i]).scalar;
    out.emplace_back(key.is_string() ? key.get<std::string>() : key.dump(), PickleValue(graph_, items[i + 1]));
  }
  return out;
}

std::vector<PickleValue> PickleValue::elements() const {
  std::vector<PickleValue> out;
  if (!is_array()) return out;
  for (const std::uint32_t item : graph_->node(node_).items) out.emplace_back(graph_, item);
  return out;
}

json PickleValue::to_json() const { return graph_ ? graph_->to_json(node_) : json(); }

}  // namespace allocsim
