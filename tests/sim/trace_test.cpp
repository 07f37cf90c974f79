#include <catch2/catch.hpp>

#include "sim/error.hpp"
#include "sim/trace.hpp"

#include <vector>

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

TEST_CASE("a trace knows its steps: the first begins at event 0, step_of finds the rest", "[trace]") {
  TraceBuilder builder({"steps", "test"});
  const AllocId weight = builder.alloc(0, 100, 0, Tag::weight);  // setup: part of step 1
  builder.begin_step();
  builder.free(1, builder.alloc(1, 10));                          // events 1, 2
  builder.begin_step();
  builder.free(2, builder.alloc(2, 10));                          // events 3, 4
  builder.free(3, weight);                                        // event 5
  const Trace trace = std::move(builder).finish();
  CHECK(trace.info.step_starts == std::vector<std::size_t>{0, 3});
  CHECK(step_of(trace.info, 0) == 1);
  CHECK(step_of(trace.info, 2) == 1);
  CHECK(step_of(trace.info, 3) == 2);
  CHECK(step_of(trace.info, 5) == 2);
  CHECK_FALSE(step_of(TraceInfo{"no steps", "test"}, 0).has_value());
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
