// A reader of Python pickles that holds plain data only: what
// torch.cuda.memory._dump_snapshot writes (protocols 2 to 5). Pickles can run code (a
// global, then REDUCE calls it) and snapshots come from strangers, so every opcode that
// names a global, builds an object or resolves a persistent id is refused by name.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace allocsim {

// Contract:
// - dicts become JSON objects, lists and tuples arrays, str strings, int numbers (integer
//   or unsigned: an int beyond 64 bits is an error), float numbers, bool, None null,
//   bytes binary values. A dict key must be a str or an int (an int key becomes its
//   decimal text, as Python's json.dumps writes it).
// - anything else (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, NEWOBJ, PERSID, EXT1, sets, ...) is
//   refused by name: "NAME: byte 28: opcode STACK_GLOBAL: refused global posix.system: a
//   memory snapshot is plain data" (the global or persistent id where the pickle names it);
// - truncated input, a stack underflow, a memo miss, a recursive structure or one nested
//   deeper than kMaxPickleDepth throws Error "NAME: byte OFFSET: ..." on one line;
// - shared references (memo gets) are copied out; their total size is bounded by a
//   multiple of the input's, so a small file cannot expand without bound.
// - the decoder is a loop over opcodes with explicit stacks: no recursion on the input.
nlohmann::json read_pickle(std::string_view bytes, const std::string& name);

inline constexpr std::size_t kMaxPickleDepth = 256;

// The decoded pickle as Python holds it: a graph whose shared references stay shared, so
// a snapshot's repeated strings and frames are not copied out (what read_pickle does).
// Same checks as read_pickle, but for the tree's: a container inside itself or nested
// deeper than kMaxPickleDepth is refused when decoding ends.
class PickleValue;
class PickleGraph {
 public:
  enum class Kind : std::uint8_t { scalar, list, tuple, dict };
  struct Node {
    Kind kind = Kind::scalar;
    nlohmann::json scalar;             // Kind::scalar: str, int, float, bool, None, bytes
    std::vector<std::uint32_t> items;  // list, tuple: the items; dict: key, value, key, value...
  };
  // `budget`: how many values and string bytes to_json may copy out; `where` starts its error.
  PickleGraph(std::vector<Node> nodes, std::uint32_t root, std::uint64_t budget, std::string where)
      : nodes_(std::move(nodes)), root_(root), budget_(budget), where_(std::move(where)) {}
  PickleValue root() const;
  const Node& node(std::uint32_t index) const { return nodes_[index]; }
  nlohmann::json to_json(std::uint32_t node) const;

 private:
  std::vector<Node> nodes_;
  std::uint32_t root_;
  std::uint64_t budget_;
  std::string where_;
};
PickleGraph decode_pickle(std::string_view bytes, const std::string& name);

// A value of a PickleGraph, read as a JSON value is (dict keys are str or int: an int key
// is matched by its decimal text). Cheap to copy; valid while its graph lives. A missing
// key reads as None.
class PickleValue {
 public:
  PickleValue() = default;  // None
  PickleValue(const PickleGraph* graph, std::uint32_t node) : graph_(graph), node_(node) {}

  bool is_object() const { return kind() == PickleGraph::Kind::dict; }
  bool is_array() const { return kind() == PickleGraph::Kind::list || kind() == PickleGraph::Kind::tuple; }
  bool is_tuple() const { return kind() == PickleGraph::Kind::tuple; }
  bool is_string() const { return scalar().is_string(); }
  // The scalar's value (None for a container).
  const nlohmann::json& scalar() const;
  std::size_t size() const;  // items of a list or tuple, keys of a dict
  bool empty() const { return size() == 0; }
  PickleValue operator[](std::size_t index) const;  // of a list or tuple, index < size()
  bool contains(std::string_view key) const;
  PickleValue get(std::string_view key) const;  // None when absent (Python's dict.get)
  // A dict's items in order, keys as text; a list's items.
  std::vector<std::pair<std::string, PickleValue>> items() const;
  std::vector<PickleValue> elements() const;
  // The value as a JSON tree (tuples as arrays), for the parts a result copies.
  nlohmann::json to_json() const;

 private:
  PickleGraph::Kind kind() const { return graph_ ? graph_->node(node_).kind : PickleGraph::Kind::scalar; }
  const PickleGraph* graph_ = nullptr;
  std::uint32_t node_ = 0;
};

}  // namespace allocsim
