#include <catch2/catch.hpp>

#include "sim/error.hpp"
#include "sim/trace.hpp"

namespace allocsim {
namespace {

TEST_CASE("a trace numbers allocations densely and records the live lower bound", "[trace]") {
  TraceBuilder builder({"hand", "test"});
  const AllocId a = builder.alloc(0, 100, 3, Tag::weight);
  const AllocId b = builder.alloc(1, 50);
  builder.free(2, a);  // live: 100, 150, then 50
  const AllocId c = builder.alloc(3, 70);  // 120
  builder.release(4);
  builder.free(5, b);
  const Trace trace = std::move(builder).finish();
  CHECK(index_of(a) == 0);
  CHECK(index_of(b) == 1);
  CHECK(index_of(c) == 2);
  CHECK(trace.events.size() == 6);
  CHECK(trace.live_lower_bound == 150);
  CHECK(trace.events[2].op == Op::free);
  CHECK(trace.events[2].stream == 3);  // a free carries its allocation's stream and tag
  CHECK(trace.events[2].tag == Tag::weight);
  CHECK(trace.events[4].op == Op::release);
}

TEST_CASE("trace validation names the bad event", "[trace]") {
  TraceBuilder builder({"hand", "test"});
  const AllocId a = builder.alloc(10, 100);
  CHECK_THROWS_WITH(builder.free(11, static_cast<AllocId>(7)), "event 1: free of id 7, which was never allocated");
  builder.free(11, a);
  CHECK_THROWS_WITH(builder.free(12, a), "event 2: free of id 0, which was already freed");
  CHECK_THROWS_WITH(builder.alloc(5, 1), "event 2: time 5 ns goes back before 11 ns");
  CHECK_THROWS_WITH(builder.alloc(12, kMaxRequestBytes + 1), Catch::Contains("over the 2^48-byte limit"));
  CHECK_NOTHROW(builder.alloc(12, kMaxRequestBytes));
}

TEST_CASE("an empty trace is an error", "[trace]") {
  TraceBuilder builder({"hand", "test"});
  CHECK_THROWS_WITH(std::move(builder).finish(), "empty trace: no events");
}

}  // namespace
}  // namespace allocsim
