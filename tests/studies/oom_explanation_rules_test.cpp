// allocsim explain's rules on messages built here from chosen figures (T, F, A, the cache's
// free bytes, P, the listed processes, L), one case for each branch and at each boundary:
// this process's own memory outside PyTorch is never another holder, the kinds in their
// order (inconsistent, fragmentation, fragmentation split between the device and the cache,
// reservation, capacity), the context band without P and its two readings, the `allowed`
// limit, and TensorFlow's tensor shapes and the driver's refusals.
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "studies/bfc_oom_log.hpp"
#include "studies/oom_explanation.hpp"
#include "studies/pasted_text.hpp"

namespace allocsim {
namespace {

std::string size(Bytes bytes) { return format_printed(bytes, SizeStyle::torch); }

const ExplainFigure& figure(const OomExplanation& explanation, const std::string& key) {
  for (const ExplainFigure& each : explanation.figures) {
    if (each.key == key) return each;
  }
  FAIL("no figure " << key);
  throw;
}

bool has_figure(const OomExplanation& explanation, const std::string& key) {
  for (const ExplainFigure& each : explanation.figures) {
    if (each.key == key) return true;
  }
  return false;
}

bool any_contains(const std::vector<std::string>& lines, const std::string& part) {
  for (const std::string& line : lines) {
    if (line.find(part) != std::string::npos) return true;
  }
  return false;
}

struct Figures {
  Bytes request = 0;
  Bytes total = 16_GiB;
  Bytes free = 1_GiB;
  Bytes allocated = 12_GiB;
  Bytes cache_free = 512_MiB;
  std::optional<Bytes> process;  // this process has P
  std::vector<std::pair<std::string, Bytes>> listed;
};

// PyTorch 2.1 on.
std::string unallocated_message(const Figures& f) {
  std::string text = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate " + size(f.request) + ". GPU 0 has a total "
                     "capacity of " + size(f.total) + " of which " + size(f.free) + " is free. ";
  for (const auto& [pid, bytes] : f.listed) text += "Process " + pid + " has " + size(bytes) + " memory in use. ";
  if (f.process) text += "Including non-PyTorch memory, this process has " + size(*f.process) + " memory in use. ";
  return text + "Of the allocated memory " + size(f.allocated) + " is allocated by PyTorch, and " + size(f.cache_free) +
         " is reserved by PyTorch but unallocated.";
}

// PyTorch 1.4 to 2.0: R = A + the cache's free bytes.
std::string reserved_message(const Figures& f) {
  return "RuntimeError: CUDA out of memory. Tried to allocate " + size(f.request) + " (GPU 0; " + size(f.total) +
         " total capacity; " + size(f.allocated) + " already allocated; " + size(f.free) + " free; " +
         size(f.allocated + f.cache_free) + " reserved in total by PyTorch)";
}

// T 16, F 1, A 12, cache free 0.5 (GiB); P = 13 GiB: this process holds 0.5 GiB outside
// PyTorch, other processes T - F - P = 2 GiB. A 3 GiB request: F + cache = 1.5 < 3 <= 1.5 + 2:
// reservation, and a new segment needs 3 - 1 = 2 GiB more free, all that the others hold.
TEST_CASE("explain rules: P - A - R is this process's own, T - F - P other processes'", "[explain]") {
  Figures f;
  f.request = 3_GiB;
  f.process = 13_GiB;
  const OomExplanation explanation = explain_oom(unallocated_message(f));
  REQUIRE(explanation.kind == ExplainedKind::reservation);
  CHECK(figure(explanation, "own_outside").bytes == 512_MiB);
  CHECK(figure(explanation, "other_processes").bytes == 2_GiB);
  CHECK(explanation.to_fit.starts_with("2.00 GiB more free on the device"));
  CHECK(any_contains(explanation.tries, "stopping the other process"));
}

// The same card with P = 15 GiB: this process holds 2.5 GiB outside PyTorch and no other
// process holds anything. Counted as another holder, T - F - A - R = 2.5 GiB would make it a
// reservation; it is capacity, short by 3 - 1.5 = 1.5 GiB, and no other process is named.
TEST_CASE("explain rules: this process's own memory outside PyTorch is no other holder", "[explain]") {
  Figures f;
  f.request = 3_GiB;
  f.process = 15_GiB;
  const OomExplanation explanation = explain_oom(unallocated_message(f));
  REQUIRE(explanation.kind == ExplainedKind::capacity);
  CHECK(figure(explanation, "outside").bytes == 2560_MiB);
  CHECK(figure(explanation, "own_outside").bytes == 2560_MiB);
  CHECK(figure(explanation, "other_processes").bytes == 0);
  CHECK(explanation.to_fit.starts_with("this process's live data smaller by at least 1.50 GiB"));
  CHECK_FALSE(any_contains(explanation.tries, "other process"));
  CHECK(any_contains(explanation.tries, "this process's other libraries"));  // 2.5 GiB: more than a context
}

// Others hold 1.75 GiB (P = 13.25 GiB): 1.5 + 1.75 >= 3 is a reservation, but a new segment
// would need 2 GiB more than F, more than they hold: "to fit" asks them for 3 - 1.5 = 1.5 GiB
// with the free bytes joined.
TEST_CASE("explain rules: to fit never asks a holder for more than it holds", "[explain]") {
  Figures f;
  f.request = 3_GiB;
  f.process = 13_GiB + 256_MiB;
  const OomExplanation explanation = explain_oom(unallocated_message(f));
  REQUIRE(explanation.kind == ExplainedKind::reservation);
  CHECK(figure(explanation, "other_processes").bytes == 1792_MiB);
  CHECK(explanation.to_fit.starts_with("1.50 GiB from what other processes hold"));
  CHECK(any_contains(explanation.tries, "expandable_segments:True"));
  // A request the card cannot hold even with the live data gone: no smaller live data fits it.
  Figures big = f;
  big.request = 20_GiB;
  const OomExplanation huge = explain_oom(unallocated_message(big));
  REQUIRE(huge.kind == ExplainedKind::capacity);
  CHECK(huge.to_fit.starts_with("a card with more memory"));
}

// Inside a container NVML lists this process under another id: one process holding all of
// T - F is this one. Read as another, its 15 GiB would make a reservation; it is capacity.
TEST_CASE("explain rules: the one listed process holding all that is not free is this one", "[explain]") {
  Figures f;
  f.request = 3_GiB;
  f.listed = {{"4711", 15_GiB}};
  const OomExplanation explanation = explain_oom(unallocated_message(f));
  REQUIRE(explanation.kind == ExplainedKind::capacity);
  CHECK(figure(explanation, "process_in_use").bytes == 15_GiB);
  CHECK(figure(explanation, "other_processes").bytes == 0);
  CHECK(any_contains(explanation.notes, "process 4711 is this process"));
  CHECK_FALSE(any_contains(explanation.tries, "other process"));
  // Two listed, 13 and 2 GiB: with A + cache free = 12.5 GiB they leave this process no room
  // beside them, so it is the one that holds 12.5 GiB (13); the other holds 2 GiB.
  f.listed = {{"4711", 13_GiB}, {"4712", 2_GiB}};
  const OomExplanation two = explain_oom(unallocated_message(f));
  REQUIRE(two.kind == ExplainedKind::reservation);
  CHECK(figure(two, "process_in_use").bytes == 13_GiB);
  CHECK(figure(two, "other_processes").bytes == 2_GiB);
  CHECK(any_contains(two.notes, "4712 holds 2.00 GiB"));
  // One listed process of 2 GiB leaves room for this one (2 + 12.5 < 15): it is another;
  // of the 0.5 GiB left outside PyTorch, all is inside the context band, this process's own.
  f.listed = {{"4712", 2_GiB}};
  const OomExplanation other = explain_oom(unallocated_message(f));
  REQUIRE(other.kind == ExplainedKind::reservation);
  CHECK_FALSE(has_figure(other, "process_in_use"));
  CHECK(figure(other, "other_processes").bytes == 2_GiB);
  CHECK(figure(other, "own_outside").bytes == 512_MiB);
}

// T - F - P within the rounding and less than any CUDA context: no other process.
TEST_CASE("explain rules: T - F - P about 0 counts no other process", "[explain]") {
  Figures f;
  f.request = 3_GiB;
  f.cache_free = 1_GiB + 512_MiB;
  f.process = 15_GiB - 32_MiB;  // T - F - P = 32 MiB
  const OomExplanation explanation = explain_oom(unallocated_message(f));
  REQUIRE(explanation.kind == ExplainedKind::capacity);  // F + cache = 2.5 GiB < 3 GiB
  CHECK(any_contains(explanation.notes, "about nothing"));
  f.process = 15_GiB - 512_MiB;  // 512 MiB: another process
  REQUIRE(explain_oom(unallocated_message(f)).kind == ExplainedKind::reservation);
}

// The kinds in their order, each at its boundary. T 16, A 12 GiB; P leaves no other process
// unless said.
TEST_CASE("explain rules: inconsistent when F alone holds the new segment", "[explain]") {
  Figures f;
  f.allocated = 10_GiB;
  f.cache_free = 64_MiB;
  f.request = 5_MiB;  // a new segment of 20 MiB (requests from 1 to 10 MiB)
  f.free = 20_MiB;
  f.process = f.total - f.free;
  const OomExplanation explanation = explain_oom(unallocated_message(f));
  REQUIRE(explanation.kind == ExplainedKind::inconsistent);
  CHECK(figure(explanation, "segment").bytes == 20_MiB);
  CHECK_THAT(describe_explanation(explanation), Catch::StartsWith("kind: inconsistent\n") && Catch::Contains("WDDM"));
  // 19 MiB free holds the request but not its 20 MiB segment: the cache's 64 MiB decide.
  f.free = 19_MiB;
  f.process = f.total - f.free;
  CHECK(explain_oom(unallocated_message(f)).kind == ExplainedKind::fragmentation);
  // A request of at most 1 MiB takes a 2 MiB segment: 1.5 MiB free holds the request but not
  // its segment (the split rule's fragmentation), 2 MiB holds both, 0.5 MiB neither (capacity).
  f.request = 1_MiB;
  f.cache_free = 0;
  for (const auto& [free, kind] : {std::pair{1_MiB + 512_KiB, ExplainedKind::fragmentation},
                                   std::pair{2_MiB, ExplainedKind::inconsistent},
                                   std::pair{512_KiB, ExplainedKind::capacity}}) {
    f.free = free;
    f.process = f.total - f.free;
    INFO(size(free));
    CHECK(explain_oom(unallocated_message(f)).kind == kind);
  }
  // A large request rounds to 2 MiB: 3 GiB needs 3 GiB free, and with the cache's 4 GiB it
  // would be fragmentation were F not enough.
  Figures large;
  large.allocated = 8_GiB;
  large.cache_free = 4_GiB;
  large.request = 3_GiB;
  large.free = 3_GiB + 256_MiB;
  large.process = large.total - large.free;
  CHECK(explain_oom(unallocated_message(large)).kind == ExplainedKind::inconsistent);
  large.free = 2_GiB + 768_MiB;
  large.process = large.total - large.free;
  CHECK(explain_oom(unallocated_message(large)).kind == ExplainedKind::fragmentation);
}

TEST_CASE("explain rules: fragmentation when F and the cache's free bytes together hold it", "[explain]") {
  Figures f;  // F 1 GiB, cache free 0.5 GiB, no other process
  f.process = f.total - f.free;
  f.request = 1_GiB + 512_MiB;  // = F + cache free
  const OomExplanation split = explain_oom(unallocated_message(f));
  REQUIRE(split.kind == ExplainedKind::fragmentation);
  CHECK_THAT(split.why, Catch::Contains("together would hold the request"));
  CHECK(split.tries.front() == "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
  f.request = 1_GiB + 768_MiB;  // more than F + cache free, and no other process: capacity
  CHECK(explain_oom(unallocated_message(f)).kind == ExplainedKind::capacity);
  f.request = 512_MiB;  // the cache alone holds it, but F = 1 GiB holds its segment first
  CHECK(explain_oom(unallocated_message(f)).kind == ExplainedKind::inconsistent);
  f.free = 256_MiB;
  f.process = f.total - f.free;
  const OomExplanation cache = explain_oom(unallocated_message(f));
  REQUIRE(cache.kind == ExplainedKind::fragmentation);
  CHECK_THAT(cache.why, Catch::Contains("the cache's free bytes alone"));
}

// No P (an older wording, or NVML unseen): of T - F - R, up to 0.5 GiB is this process's own
// context; inside that band the answer gives both readings.
TEST_CASE("explain rules: without P, the context band and its two readings", "[explain]") {
  // T 8 GiB, F 0.25, A 7, cache free 0.5: T - F - R = 0.25 GiB, inside the band.
  Figures f;
  f.total = 8_GiB;
  f.free = 256_MiB;
  f.allocated = 7_GiB;
  f.cache_free = 512_MiB;
  f.request = 896_MiB;  // F + cache = 768 MiB < 896 MiB <= 768 MiB + 256 MiB
  const OomExplanation both = explain_oom(reserved_message(f));
  REQUIRE(both.kind == ExplainedKind::capacity);
  CHECK_FALSE(both.certain);
  CHECK(figure(both, "own_outside").bytes == 256_MiB);
  CHECK(figure(both, "other_processes").bytes == 0);
  CHECK(any_contains(both.notes, "two readings"));
  CHECK(any_contains(both.notes, "the kind would be reservation"));
  CHECK_FALSE(any_contains(both.tries, "other process"));
  f.request = 2_GiB;  // capacity under either reading
  const OomExplanation same = explain_oom(reserved_message(f));
  REQUIRE(same.kind == ExplainedKind::capacity);
  CHECK(same.certain);
  CHECK(any_contains(same.notes, "the kind would be the same"));
  // Above the band: 1.25 GiB outside, 0.5 GiB of it this process's context, 0.75 GiB another's.
  f.free = 256_MiB;
  f.allocated = 6_GiB;
  f.request = 1_GiB + 256_MiB;  // F + cache = 768 MiB; + 768 MiB others >= 1.25 GiB
  const OomExplanation above = explain_oom(reserved_message(f));
  REQUIRE(above.kind == ExplainedKind::reservation);
  CHECK(figure(above, "own_outside").bytes == 512_MiB);
  CHECK(figure(above, "other_processes").bytes == 768_MiB);
  CHECK_FALSE(any_contains(above.notes, "two readings"));
}

// A total that a preset prints (t4: 14.74 GiB) takes that preset's context estimate (500 MiB)
// as the band; 505 MiB outside is then past it (by less than a context: no other process),
// while on a card of no preset it lies inside the 512 MiB band and has two readings.
TEST_CASE("explain rules: the card's preset context as the band", "[explain]") {
  for (const char* total : {"14.74 GiB", "14.50 GiB"}) {
    INFO(total);
    Figures f;
    f.total = parse_printed_size(total)->bytes;
    f.free = 2_GiB;
    f.allocated = 12_GiB;
    f.cache_free = f.total - f.free - f.allocated - 505_MiB;
    f.request = 3_GiB;
    const OomExplanation explanation = explain_oom(unallocated_message(f));  // no P
    CHECK(figure(explanation, "outside").bytes == Approx(505_MiB).margin(1_MiB));
    if (std::string(total) == "14.74 GiB") {
      CHECK_THAT(figure(explanation, "own_outside").how, Catch::Contains("preset t4"));
      CHECK(figure(explanation, "own_outside").bytes == 500_MiB);
      CHECK(figure(explanation, "other_processes").bytes == 0);
      CHECK_FALSE(any_contains(explanation.notes, "two readings"));
    } else {
      CHECK(figure(explanation, "own_outside").bytes == Approx(505_MiB).margin(1_MiB));
      CHECK(any_contains(explanation.notes, "two readings"));
    }
  }
}

// `L allowed` (a memory fraction) is judged against the limit: the allocator refuses a
// segment that takes A + cache free past L, though F alone would hold it.
TEST_CASE("explain rules: an allowed limit is judged against the limit", "[explain]") {
  const std::string limited =
      "CUDA out of memory. Tried to allocate 1.00 GiB (GPU 0; 16.00 GiB total capacity; 6.00 GiB already allocated; "
      "9.00 GiB free; 6.50 GiB allowed; 6.25 GiB reserved in total by PyTorch)";
  const OomExplanation explanation = explain_oom(limited);
  REQUIRE(explanation.kind == ExplainedKind::reservation);
  CHECK_THAT(explanation.why, Catch::Contains("6.50 GiB this process is allowed"));
  CHECK(explanation.to_fit == "a limit of at least 7.25 GiB");  // 6.25 reserved + 1 GiB segment
  // Under the limit (7.50 GiB allowed), the same figures show no shortage.
  std::string roomy = limited;
  roomy.replace(roomy.find("6.50 GiB allowed"), 16, "7.50 GiB allowed");
  CHECK(explain_oom(roomy).kind == ExplainedKind::inconsistent);
}

// TensorFlow: a request given only as a tensor's shape and type is their product.
TEST_CASE("explain rules: TensorFlow's shape times the type's size", "[explain]") {
  const auto [type, bytes] = GENERATE(table<std::string, Bytes>({{"float", 4}, {"half", 2}, {"bfloat16", 2}, {"double", 8},
                                                                 {"int32", 4}, {"int64", 8}, {"int8", 1}, {"uint8", 1},
                                                                 {"bool", 1}, {"complex64", 8}, {"complex128", 16}}));
  INFO(type);
  CHECK(tf_type_size(type) == bytes);
  const std::string op = "ResourceExhaustedError: OOM when allocating tensor with shape[64,3,512,512] and type " + type +
                         " on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc\n";
  const OomExplanation alone = explain_oom(op);
  CHECK_FALSE(alone.kind);  // no limit, nothing in use
  CHECK(figure(alone, "request").bytes == Bytes{64} * 3 * 512 * 512 * bytes);
  // With the Stats, a 1 GiB limit and pool, 128 MiB short of it in use: the tensors of 48 and
  // 96 MiB (1 and 2 bytes an element) fit the limit but no chunk (fragmentation), those of
  // 192 MiB and more exceed it (capacity).
  const std::string stats = op + "Stats:\nLimit:        1073741824\nInUse:         939524096\n"
                                 "total_region_allocated_bytes_: 1073741824 memory_limit_: 1073741824\n";
  const OomExplanation judged = explain_oom(stats);
  CHECK(judged.kind == (bytes > 2 ? ExplainedKind::capacity : ExplainedKind::fragmentation));
}

TEST_CASE("explain rules: a shape wrapped or with a type of unknown size", "[explain]") {
  const OomExplanation wrapped = explain_oom("OOM when allocating tensor with sha\npe[1024,10\n24] and type half on /job:0");
  CHECK(figure(wrapped, "request").bytes == 2_MiB);
  const OomExplanation unknown = explain_oom("OOM when allocating tensor with shape[1024,1024] and type float8_e5m2 on /job:0");
  CHECK_FALSE(has_figure(unknown, "request"));
  CHECK(any_contains(unknown.notes, "not known"));
  const OomExplanation huge = explain_oom("OOM when allocating tensor with shape[4294967296,4294967296,16] and type float on");
  CHECK_FALSE(has_figure(huge, "request"));
  CHECK(tf_type_size("float16") == std::nullopt);
}

// The driver's refusals: the device refused a new region, with or without the summary.
constexpr const char* kDriverLines =
    "2019-03-01 10:00:00.000001: I tensorflow/stream_executor/cuda/cuda_driver.cc:806] failed to allocate 10.50G "
    "(11274289152 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory\n"
    "2019-03-01 10:00:00.000002: I tensorflow/stream_executor/cuda/cuda_driver.cc:806] failed to allocate 9.45G "
    "(10146860032 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory\n";

TEST_CASE("explain rules: TensorFlow's driver refusals, cut off or with the summary", "[explain]") {
  const std::optional<BfcOomLog> log = read_bfc_oom_log(kDriverLines);
  REQUIRE(log);
  CHECK(log->device_refused == std::vector<Bytes>{11274289152, 10146860032});
  const OomExplanation cut = explain_oom(kDriverLines);
  REQUIRE(cut.kind == ExplainedKind::reservation);
  CHECK_FALSE(cut.certain);
  CHECK(figure(cut, "device_refused").bytes == 10146860032);
  CHECK(any_contains(cut.notes, "cut off"));
  // With the summary: 4 GiB in use + a 1 GiB request under an 11 GiB limit: the device refused.
  const std::string summary = std::string(kDriverLines) +
                              "Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.00GiB (rounded to 1073741824).\n"
                              "Stats:\nLimit:        11811160064\nInUse:         4294967296\n";
  const OomExplanation whole = explain_oom(summary);
  REQUIRE(whole.kind == ExplainedKind::reservation);
  CHECK(whole.certain);
  // 11 GiB in use + 1 GiB over the 11 GiB limit: capacity, whatever the driver said.
  std::string full = summary;
  full.replace(full.find("4294967296"), 10, "11811160064");
  CHECK(explain_oom(full).kind == ExplainedKind::capacity);
  // With the pool's size the limit's allowance decides: a 11 GiB pool at its limit allowed no
  // new region, so the refusals were older; 4 GiB in use of it, the 1 GiB request fits no
  // chunk: fragmentation.
  const std::string pooled = summary + "total_region_allocated_bytes_: 11811160064 memory_limit_: 11811160064\n";
  const OomExplanation older = explain_oom(pooled);
  REQUIRE(older.kind == ExplainedKind::fragmentation);
  CHECK(any_contains(older.notes, "refusals came before"));
  // A driver line with another error is no refusal of memory.
  CHECK_FALSE(read_bfc_oom_log("failed to allocate 1.00G (1073741824 bytes) from device: CUDA_ERROR_INVALID_VALUE"));
}

}  // namespace
}  // namespace allocsim
