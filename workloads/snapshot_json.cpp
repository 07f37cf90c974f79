#include "workloads/snapshot_json.hpp"

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/error.hpp"

namespace allocsim {
namespace {

using nlohmann::json;

// nlohmann's SAX events turned into graph nodes: each value a node, appended to the
// container open around it. An error is kept and the parse stopped, then thrown whole.
class GraphBuilder final : public nlohmann::json_sax<json> {
 public:
  explicit GraphBuilder(std::string name) : name_(std::move(name)) {}

  bool null() override { return scalar(json()); }
  bool boolean(bool value) override { return scalar(json(value)); }
  bool number_integer(number_integer_t value) override { return scalar(json(value)); }
  bool number_unsigned(number_unsigned_t value) override { return scalar(json(value)); }
  bool number_float(number_float_t value, const string_t&) override { return scalar(json(value)); }
  bool string(string_t& value) override { return scalar(json(std::move(value))); }
  bool binary(binary_t& value) override { return scalar(json::binary(std::move(value))); }
  bool key(string_t& value) override { return scalar(json(std::move(value))); }
  bool start_object(std::size_t) override { return open(Kind::dict); }
  bool start_array(std::size_t) override { return open(Kind::list); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& error) override {
    // "[json.exception.parse_error.101] parse error at line 1, ...": the bracketed id says nothing to a user.
    const std::string_view what = error.what();
    const std::size_t id_end = what.find("] ");
    fail(position, "not a JSON snapshot: " +
                       std::string(id_end == std::string_view::npos ? what : what.substr(id_end + 2)));
    return false;
  }

  PickleGraph graph(std::size_t input_size) {
    if (error_) throw Error(*error_);
    if (nodes_.empty()) throw Error(name_ + ": byte 0: not a JSON snapshot: no value");
    // No shared references in JSON: the budget only bounds what to_json copies, as for a pickle.
    const std::uint64_t budget = 64 * static_cast<std::uint64_t>(input_size) + (1u << 20);
    return PickleGraph(std::move(nodes_), 0, budget, name_);
  }

 private:
  using Node = PickleGraph::Node;
  using Kind = PickleGraph::Kind;

  std::uint32_t add(Node node) {
    const auto index = static_cast<std::uint32_t>(nodes_.size());
    nodes_.push_back(std::move(node));
    if (!open_.empty()) nodes_[open_.back()].items.push_back(index);
    return index;
  }
  bool scalar(json value) {
    add(Node{Kind::scalar, std::move(value), {}});
    return true;
  }
  bool open(Kind kind) {
    if (open_.size() >= kMaxPickleDepth) {
      // SAX events carry no offset: the message names the depth instead.
      if (!error_) error_ = name_ + ": not a JSON snapshot: nested deeper than " + std::to_string(kMaxPickleDepth) + " levels";
      return false;
    }
    open_.push_back(add(Node{kind, json(), {}}));
    return true;
  }
  bool close() {
    open_.pop_back();
    return true;
  }
  void fail(std::size_t offset, const std::string& why) {
    if (!error_) error_ = name_ + ": byte " + std::to_string(offset) + ": " + why;
  }

  std::string name_;
  std::vector<Node> nodes_;
  std::vector<std::uint32_t> open_;
  std::optional<std::string> error_;
};

}  // namespace

bool looks_like_json(std::string_view bytes) {
  const std::size_t first = bytes.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && bytes[first] == '{';
}

PickleGraph decode_snapshot_json(std::string_view text, const std::string& name) {
  GraphBuilder builder(name);
  json::sax_parse(text.begin(), text.end(), &builder, nlohmann::detail::input_format_t::json, true, false);
  return builder.graph(text.size());
}

}  // namespace allocsim
