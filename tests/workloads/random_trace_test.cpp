#include <catch2/catch.hpp>

#include "sim/error.hpp"
#include "workloads/catalogue.hpp"
#include "workloads/random_trace.hpp"

namespace allocsim {
namespace {

bool same_events(const Trace& a, const Trace& b) {
  if (a.events.size() != b.events.size() || a.requested != b.requested) return false;
  for (std::size_t i = 0; i < a.events.size(); ++i) {
    const Event& x = a.events[i];
    const Event& y = b.events[i];
    if (x.time != y.time || x.id != y.id || x.op != y.op || x.stream != y.stream) return false;
  }
  return true;
}

TEST_CASE("a random trace is the same for the same seed and has the asked shape", "[random]") {
  const Trace a = load_workload("random:n=10000,seed=7,max=1MiB,live=16MiB,streams=4");
  const Trace b = load_workload("random:n=10000,seed=7,max=1MiB,live=16MiB,streams=4");
  const Trace c = load_workload("random:n=10000,seed=8,max=1MiB,live=16MiB,streams=4");
  CHECK(same_events(a, b));
  CHECK_FALSE(same_events(a, c));
  CHECK(a.events.size() == 10000);
  std::size_t allocs = 0;
  Stream max_stream = 0;
  for (const Event& event : a.events) {
    allocs += event.op == Op::alloc;
    max_stream = std::max(max_stream, event.stream);
  }
  CHECK(allocs == 5000);  // n even: everything allocated is freed by the end
  CHECK(max_stream == 3);
  for (Bytes bytes : a.requested) {
    CHECK(bytes >= 256);
    CHECK(bytes <= 1_MiB);
  }
  // Live bytes wander around the target: the peak is above it, but not wildly.
  CHECK(a.live_lower_bound > 16_MiB);
  CHECK(a.live_lower_bound < 48_MiB);
}

TEST_CASE("random trace options are checked", "[random]") {
  CHECK_THROWS_WITH(load_workload("random:n=0"), Catch::Contains("n must be between 1 and 2147483648"));
  CHECK_THROWS_WITH(load_workload("random:n=100000000000"), Catch::Contains("n must be between 1 and"));
  CHECK_THROWS_WITH(load_workload("random:min=2MiB,max=1MiB"), Catch::Contains("min <= max"));
  CHECK_THROWS_WITH(load_workload("random:order=oldest"), Catch::Contains("not random, fifo or lifo"));
  CHECK_THROWS_WITH(load_workload("random:sizes=normal"), Catch::Contains("not loguniform or uniform"));
  CHECK_THROWS_WITH(load_workload("random:bogus=1"), Catch::Contains("unknown key 'bogus'; valid keys: n=1000000"));
  CHECK_THROWS_WITH(load_workload("resnet"), Catch::StartsWith("unknown workload 'resnet'; valid workloads: random, ") &&
                                                 Catch::Contains("resnet50_bN") &&
                                                 Catch::EndsWith(", or a path to a .csv trace"));
}

TEST_CASE("fifo and lifo orders give the lifetimes they name", "[random]") {
  const Trace fifo = load_workload("random:n=1000,order=fifo");
  const Trace lifo = load_workload("random:n=1000,order=lifo");
  AllocId last_fifo{};
  bool first = true;
  for (const Event& event : fifo.events) {
    if (event.op != Op::free) continue;
    if (!first) CHECK(index_of(event.id) > index_of(last_fifo));  // oldest first
    last_fifo = event.id;
    first = false;
  }
  // LIFO: the first free frees the most recent allocation.
  for (std::size_t i = 1; i < lifo.events.size(); ++i) {
    if (lifo.events[i].op == Op::free && lifo.events[i - 1].op == Op::alloc) {
      CHECK(lifo.events[i].id == lifo.events[i - 1].id);
    }
  }
}

}  // namespace
}  // namespace allocsim

namespace allocsim {
namespace {

TEST_CASE("random:sync_every adds device syncs between the same requests", "[random][sync]") {
  RandomTraceOptions options;
  options.events = 100;
  options.seed = 3;
  const Trace plain = make_random_trace(options, "plain");
  options.sync_every = 10;
  const Trace synced = make_random_trace(options, "synced");
  std::vector<Event> requests;
  std::size_t syncs = 0;
  for (const Event& event : synced.events) {
    if (event.op == Op::sync) {
      ++syncs;
      CHECK(sync_of(event).kind == SyncKind::device);
    } else {
      requests.push_back(event);
    }
  }
  CHECK(syncs == 10);
  REQUIRE(requests.size() == plain.events.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    CHECK(requests[i].id == plain.events[i].id);
    CHECK(requests[i].op == plain.events[i].op);
  }
  CHECK(synced.events[10].op == Op::sync);  // after the tenth request
}

}  // namespace
}  // namespace allocsim
