// trace info's summary and trace slice's cut, on traces small enough to check by hand.
#include <catch2/catch.hpp>

#include "sim/error.hpp"
#include "workloads/trace_slice.hpp"
#include "workloads/trace_summary.hpp"

namespace allocsim {
namespace {

using Catch::Contains;

// 0 alloc a 100 @0, 1 alloc b 200 @10 (stream 1, weight), 2 free a @20, 3 alloc c 300 @30,
// 4 free b @40, 5 free c @50; steps start at events 0 and 3; layers l0, l1, l2.
Trace sample() {
  TraceBuilder builder(TraceInfo{"sample", "test"});
  builder.begin_step();
  const AllocId a = builder.alloc(0, 100, 0, Tag::activation, "l0");
  const AllocId b = builder.alloc(10, 200, 1, Tag::weight, "l1");
  builder.free(20, a);
  builder.begin_step();
  const AllocId c = builder.alloc(30, 300, 0, Tag::activation, "l2");
  builder.free(40, b);
  builder.free(50, c);
  return std::move(builder).finish();
}

TEST_CASE("trace summary: counts, span, bound and requests by stream and tag", "[trace-tools]") {
  const TraceSummary summary = summarize(sample());
  CHECK(summary.events == 6);
  CHECK(summary.allocations == 3);
  CHECK(summary.frees == 3);
  CHECK(summary.live_at_end == 0);
  CHECK(summary.last_time - summary.first_time == 50);
  CHECK(summary.live_lower_bound == 500);  // b and c at event 3
  CHECK(summary.lower_bound_event == 3);
  CHECK(summary.largest_allocation == 300);
  CHECK(summary.steps == 2);
  CHECK(summary.layers == 3);
  REQUIRE(summary.streams.size() == 2);
  CHECK(summary.streams.at(0).allocations == 2);
  CHECK(summary.streams.at(0).bytes == 400);
  CHECK(summary.streams.at(1).bytes == 200);
  CHECK(summary.tags[static_cast<std::size_t>(Tag::activation)].allocations == 2);
  CHECK(summary.tags[static_cast<std::size_t>(Tag::weight)].bytes == 200);
}

TEST_CASE("trace slice by events: blocks alive at the cut start it, later frees are dropped", "[trace-tools]") {
  const Trace original = sample();
  const TraceSlice slice = slice_trace(original, SliceRange{SliceRange::By::events, 2, 4});
  const Trace& trace = slice.trace;
  CHECK(slice.first_event == 2);
  CHECK(slice.end_event == 4);
  CHECK(slice.carried_in == 2);     // a and b were alive at event 2
  CHECK(slice.frees_dropped == 2);  // b's free at 4 and c's at 5
  REQUIRE(trace.events.size() == 4);
  CHECK(trace.events[0].op == Op::alloc);
  CHECK(trace.bytes_of(trace.events[0].id) == 100);
  CHECK(trace.events[1].stream == 1);  // b keeps its stream, tag and layer
  CHECK(trace.events[1].tag == Tag::weight);
  CHECK(trace.layer_names[trace.layer[index_of(trace.events[1].id)]] == "l1");
  CHECK(trace.events[2].op == Op::free);  // a's free, at the cut: time 0
  CHECK(trace.events[2].time == 0);
  CHECK(trace.events[3].time == 10);      // c at 30, the cut at 20
  CHECK(trace.info.step_starts == std::vector<std::size_t>{0, 3});  // event 3 began step 2
  CHECK(trace.live_lower_bound == 500);
  CHECK(trace.allocations() == 3);
}

TEST_CASE("trace slice by time: from the first event at or after A to before B", "[trace-tools]") {
  const TraceSlice slice = slice_trace(sample(), SliceRange{SliceRange::By::time, 25, 45});
  const Trace& trace = slice.trace;
  CHECK(slice.first_event == 3);
  CHECK(slice.end_event == 5);
  CHECK(slice.carried_in == 1);  // b
  CHECK(slice.frees_dropped == 1);  // c's
  REQUIRE(trace.events.size() == 3);
  CHECK(trace.events[1].time == 5);   // c at 30, the cut at 25
  CHECK(trace.events[2].time == 15);  // b's free at 40
  CHECK(trace.info.step_starts == std::vector<std::size_t>{0});  // the slice begins at step 2's start
  // Open ends.
  CHECK(slice_trace(sample(), SliceRange{SliceRange::By::events, 4, {}}).trace.events.size() == 4);  // b, c carried
  CHECK(slice_trace(sample(), SliceRange{SliceRange::By::time, {}, 15}).trace.events.size() == 2);
}

TEST_CASE("trace slice: an empty range is an error saying what the trace holds", "[trace-tools]") {
  CHECK_THROWS_WITH(slice_trace(sample(), SliceRange{SliceRange::By::events, 4, 4}),
                    Contains("--events 4:4 holds no event (the trace has 6"));
  CHECK_THROWS_WITH(slice_trace(sample(), SliceRange{SliceRange::By::events, 9, {}}), Contains("holds no event"));
  CHECK_THROWS_WITH(slice_trace(sample(), SliceRange{SliceRange::By::time, 60, {}}),
                    Contains("holds no event (the trace's events are at "));
}

}  // namespace
}  // namespace allocsim
