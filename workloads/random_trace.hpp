// A seeded random trace to exercise the engine and policies at scale: sizes drawn from
// a distribution, live bytes wandering around a target, blocks freed in random, FIFO
// or LIFO order (which sets the lifetime distribution).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include <memory>

#include "sim/event_source.hpp"
#include "sim/spec.hpp"
#include "sim/trace.hpp"

namespace allocsim {

enum class SizeDistribution : std::uint8_t { log_uniform, uniform };
enum class FreeOrder : std::uint8_t { random, fifo, lifo };

struct RandomTraceOptions {
  std::uint64_t events = 1'000'000;
  std::uint64_t seed = 1;
  Bytes min_bytes = 256;
  Bytes max_bytes = 16_MiB;
  SizeDistribution sizes = SizeDistribution::log_uniform;
  Bytes target_live = 1_GiB;
  FreeOrder order = FreeOrder::random;
  Stream streams = 1;
  Nanos gap = 1000;  // between consecutive events
  std::uint64_t sync_every = 0;  // a device sync after every this many requests; 0 = none
};

inline constexpr std::array kRandomTraceParams{
    ParamInfo{"n", ParamKind::count, "1000000", "number of events; every block is freed by the end when n is even"},
    ParamInfo{"seed", ParamKind::count, "1", "the same seed gives the same trace on every machine"},
    ParamInfo{"min", ParamKind::bytes, "256", "smallest request"},
    ParamInfo{"max", ParamKind::bytes, "16MiB", "largest request"},
    ParamInfo{"sizes", ParamKind::text, "loguniform", "size distribution between min and max: loguniform or uniform"},
    ParamInfo{"live", ParamKind::bytes, "1GiB", "live bytes wander around this target"},
    ParamInfo{"order", ParamKind::text, "random",
              "which live block a free picks: random (memoryless lifetimes), fifo or lifo"},
    ParamInfo{"streams", ParamKind::count, "1", "requests spread uniformly over this many streams"},
    ParamInfo{"gap", ParamKind::count, "1000", "nanoseconds between consecutive events"},
    ParamInfo{"sync_every", ParamKind::count, "0",
              "a device synchronisation after every this many requests (not counted in n); 0 = none"},
};

RandomTraceOptions random_trace_options(const Params& params);  // throws on bad values
Trace make_random_trace(const RandomTraceOptions& options, std::string name);
// The same events streamed, never held whole: ids are slots, reused after their free.
std::shared_ptr<const EventSourceFactory> random_trace_stream(const RandomTraceOptions& options, std::string name);

}  // namespace allocsim
