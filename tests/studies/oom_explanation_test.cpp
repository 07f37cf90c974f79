// allocsim explain's reading and verdict: each PyTorch wording, each line prefix, wrapped
// lines, each kind with figures worked by hand, and TensorFlow's BFC log with and without
// its prefixes. The texts are written for these tests in the frameworks' wordings.
#include <string>

#include <catch2/catch.hpp>

#include "studies/bfc_oom_log.hpp"
#include "studies/oom_explanation.hpp"
#include "studies/pasted_text.hpp"
#include "studies/torch_oom_message.hpp"

namespace allocsim {
namespace {

const ExplainFigure& figure(const OomExplanation& explanation, const std::string& key) {
  for (const ExplainFigure& each : explanation.figures) {
    if (each.key == key) return each;
  }
  FAIL("no figure " << key);
  throw;
}

// 2.1 on. Hand-worked: cache free R = 1.03 GiB >= 512.00 MiB: fragmentation. Outside
// T - F - A - R = 23.65 GiB - 210.44 MiB - 21.90 GiB - 1.03 GiB = 0.51 GiB.
constexpr const char* kUnallocatedFragmentation =
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of 23.65 GiB "
    "of which 210.44 MiB is free. Including non-PyTorch memory, this process has 23.43 GiB memory in use. Of the allocated "
    "memory 21.90 GiB is allocated by PyTorch, and 1.03 GiB is reserved by PyTorch but unallocated. If reserved but "
    "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  "
    "See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)";

// 2.1 on. R = 768 MiB < 4 GiB, F + R = 2.25 GiB < 4 GiB; other processes T - F - P = 15.77 -
// 1.50 - 8.26 = 6.01 GiB, and 2.25 + 6.01 >= 4: reservation. Outside = 15.77 - 1.50 - 7.00 -
// 0.75 = 6.52 GiB, of it this process's own P - A - R = 8.26 - 7.00 - 0.75 = 0.51 GiB.
constexpr const char* kUnallocatedReservation =
    "RuntimeError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of 15.77 GiB of which "
    "1.50 GiB is free. Process 4242 has 6.00 GiB memory in use. Including non-PyTorch memory, this process has 8.26 GiB "
    "memory in use. Of the allocated memory 7.00 GiB is allocated by PyTorch, and 768.00 MiB is reserved by PyTorch but "
    "unallocated.";

// 2.1 printed `capacty`. Other processes T - F - P = 7.79 GiB - 20.69 MiB - 7.75 GiB = 20 MiB:
// about nothing. F + R = 29.30 MiB < 2 GiB: capacity, short by 2048 - 29.30 MiB = 1.97 GiB.
constexpr const char* kCapactyCapacity =
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacty of 7.79 GiB "
    "of which 20.69 MiB is free. Including non-PyTorch memory, this process has 7.75 GiB memory in use. Of the allocated "
    "memory 7.45 GiB is allocated by PyTorch, and 8.61 MiB is reserved by PyTorch but unallocated. If reserved but "
    "unallocated memory is large try setting max_split_size_mb to avoid fragmentation.";

// Up to 1.3: C = 120 MiB is the cache's free bytes, >= 64 MiB: fragmentation. Outside =
// 10.92 GiB - 18.50 MiB - 10.10 GiB - 120.00 MiB = 701.18 MiB = 0.68 GiB.
constexpr const char* kCached =
    "RuntimeError: CUDA out of memory. Tried to allocate 64.00 MiB (GPU 0; 10.92 GiB total capacity; 10.10 GiB already "
    "allocated; 18.50 MiB free; 120.00 MiB cached)";

// 1.4 to 2.0: cache free R - A = 0.30 GiB < 1.50 GiB; T - A = 6.97 GiB: reservation. Outside
// T - F - R = 11.17 GiB - 900.00 MiB - 4.50 GiB = 5.79 GiB.
constexpr const char* kReserved =
    "RuntimeError: CUDA out of memory. Tried to allocate 1.50 GiB (GPU 0; 11.17 GiB total capacity; 4.20 GiB already "
    "allocated; 900.00 MiB free; 4.50 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try "
    "setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF";

// With `allowed`: A + request = 8.30 GiB > 8.00 GiB allowed, the card has room: reservation.
constexpr const char* kAllowed =
    "CUDA out of memory. Tried to allocate 512.00 MiB (GPU 1; 31.75 GiB total capacity; 7.80 GiB already allocated; "
    "22.10 GiB free; 8.00 GiB allowed; 7.90 GiB reserved in total by PyTorch)";

// Each prefix on each line, and the message wrapped at a fixed column inside words and numbers.
std::string wrapped(const std::string& text, const std::string& prefix, std::size_t column) {
  std::string out = "Traceback (most recent call last):\n  File \"train.py\", line 7, in <module>\n";
  for (std::size_t at = 0; at < text.size(); at += column) out += prefix + text.substr(at, column) + "\n";
  return out;
}

TEST_CASE("explain: printed sizes read with their rounding, printed as the frameworks print", "[explain]") {
  CHECK(parse_printed_size("14.76 GiB")->bytes == 15848429322);
  CHECK(parse_printed_size("14.76 GiB")->error == 1_GiB / 200);
  CHECK(parse_printed_size("1024.00 KiB")->bytes == 1_MiB);
  CHECK(parse_printed_size("0 bytes")->bytes == 0);
  CHECK(parse_printed_size("0 bytes")->error == 0);
  CHECK(parse_printed_size("2.00GiB")->bytes == 2_GiB);
  CHECK(parse_printed_size("256.0KiB")->bytes == 256_KiB);
  CHECK(parse_printed_size("4B")->bytes == 4);
  CHECK(parse_printed_size("1073741824")->bytes == 1_GiB);
  CHECK_FALSE(parse_printed_size("GiB"));
  CHECK_FALSE(parse_printed_size("1.5 parsecs"));
  CHECK(format_printed(20_MiB, SizeStyle::torch) == "20.00 MiB");
  CHECK(format_printed(1_MiB, SizeStyle::torch) == "1024.00 KiB");
  CHECK(format_printed(512, SizeStyle::torch) == "512 bytes");
  CHECK(format_printed(1_GiB, SizeStyle::tensorflow) == "1.00GiB");
  CHECK(format_printed(256, SizeStyle::tensorflow) == "256B");
  CHECK(format_gib(512_MiB) == "0.50 GiB");
}

TEST_CASE("explain: line prefixes of launchers and loggers are dropped", "[explain]") {
  CHECK(strip_line_prefix("[rank2]: torch.OutOfMemoryError: x") == "torch.OutOfMemoryError: x");
  CHECK(strip_line_prefix("[default0]:RuntimeError: x") == "RuntimeError: x");
  CHECK(strip_line_prefix("2024-03-01 12:00:01,234 - ERROR - CUDA out") == "CUDA out");
  CHECK(strip_line_prefix("2020-02-15 17:58:44.147110: I tensorflow/core/common_runtime/bfc_allocator.cc:905] Bin (256)") ==
        "Bin (256)");
  CHECK(strip_line_prefix("I0215 17:58:44.147110 12345 bfc_allocator.cc:1095] InUse at 7f00 of size 256 next 1") ==
        "InUse at 7f00 of size 256 next 1");
  CHECK(strip_line_prefix("23:02:20 [ERROR] CUDA out of memory.") == "CUDA out of memory.");
  CHECK(strip_line_prefix("Free  at 7f00 of size 256 next 2") == "Free  at 7f00 of size 256 next 2");
  CHECK(strip_line_prefix("If reserved memory is >> allocated") == "If reserved memory is >> allocated");
}

TEST_CASE("explain: PyTorch 2.1+ fragmentation, worked by hand", "[explain]") {
  const OomExplanation explanation = explain_oom(kUnallocatedFragmentation);
  REQUIRE(explanation.kind == ExplainedKind::fragmentation);
  CHECK(explanation.certain);
  CHECK(explanation.source == "pytorch");
  CHECK(figure(explanation, "request").shown == "512.00 MiB");
  CHECK(figure(explanation, "device_free").shown == "210.44 MiB");
  CHECK(figure(explanation, "cache_free").shown == "1.03 GiB");
  CHECK(figure(explanation, "outside").shown == "0.51 GiB");
  CHECK(explanation.tries.front() == "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
  const std::string text = describe_explanation(explanation);
  CHECK_THAT(text, Catch::StartsWith("kind: fragmentation\n"));
  CHECK_THAT(text, Catch::Contains("T - F - A - R = 23.65 GiB - 210.44 MiB - 21.90 GiB - 1.03 GiB"));
}

TEST_CASE("explain: PyTorch 2.1+ reservation names the other process", "[explain]") {
  const OomExplanation explanation = explain_oom(kUnallocatedReservation);
  REQUIRE(explanation.kind == ExplainedKind::reservation);
  CHECK(figure(explanation, "cache_free").shown == "768.00 MiB");
  CHECK(figure(explanation, "outside").shown == "6.52 GiB");
  CHECK(figure(explanation, "other_processes").shown == "6.01 GiB");
  CHECK(figure(explanation, "own_outside").shown == "0.51 GiB");
  const std::string text = describe_explanation(explanation);
  CHECK_THAT(text, Catch::Contains("to fit: 2.50 GiB more free on the device"));
  CHECK_THAT(text, Catch::Contains("try: stopping the other process"));
}

TEST_CASE("explain: PyTorch 2.1's `capacty`, capacity", "[explain]") {
  const OomExplanation explanation = explain_oom(kCapactyCapacity);
  REQUIRE(explanation.kind == ExplainedKind::capacity);
  CHECK(explanation.wording.find("2.1") != std::string::npos);
  CHECK_THAT(describe_explanation(explanation), Catch::Contains("smaller by at least 1.97 GiB"));
  CHECK_THAT(describe_explanation(explanation), !Catch::Contains("stopping the other process"));
  CHECK_THAT(describe_explanation(explanation), Catch::Contains("try: a smaller batch"));
}

TEST_CASE("explain: PyTorch up to 1.3, `cached` is the cache's free bytes", "[explain]") {
  const std::optional<TorchOomMessage> message = read_torch_oom_message(kCached);
  REQUIRE(message);
  CHECK(message->wording == TorchWording::cached);
  CHECK(message->gpu == 0);
  const OomExplanation explanation = explain_oom(kCached);
  REQUIRE(explanation.kind == ExplainedKind::fragmentation);
  CHECK(figure(explanation, "cache_free").shown == "120.00 MiB");
  CHECK(figure(explanation, "outside").shown == "0.68 GiB");
}

TEST_CASE("explain: PyTorch 1.4 to 2.0, `reserved in total` holds A", "[explain]") {
  const OomExplanation explanation = explain_oom(kReserved);
  REQUIRE(explanation.kind == ExplainedKind::reservation);
  CHECK(figure(explanation, "cache_free").shown == "307.20 MiB");
  CHECK(figure(explanation, "outside").shown == "5.79 GiB");
  CHECK_THAT(describe_explanation(explanation), Catch::Contains("R - A = 4.50 GiB - 4.20 GiB"));
}

TEST_CASE("explain: `L allowed` below A + the request is a reservation by the limit", "[explain]") {
  const OomExplanation explanation = explain_oom(kAllowed);
  REQUIRE(explanation.kind == ExplainedKind::reservation);
  CHECK(figure(explanation, "allowed").shown == "8.00 GiB");
  CHECK_THAT(describe_explanation(explanation), Catch::Contains("set_per_process_memory_fraction"));
}

TEST_CASE("explain: every prefix and a wrap at any column read the same", "[explain]") {
  const std::string prefix = GENERATE(std::string(""), std::string("[rank2]: "), std::string("[default0]:"),
                                      std::string("2024-03-01 12:00:01,234 - ERROR - "),
                                      std::string("2020-02-15 17:58:44.147110: E some/file.cc:12] "));
  const std::size_t column = GENERATE(std::size_t{17}, std::size_t{80}, std::size_t{4096});
  for (const char* text : {kUnallocatedFragmentation, kUnallocatedReservation, kCapactyCapacity, kCached, kReserved}) {
    INFO(prefix << " / " << column << " / " << text);
    const OomExplanation whole = explain_oom(text);
    const OomExplanation pasted = explain_oom(wrapped(text, prefix, column));
    CHECK(pasted.kind == whole.kind);
    CHECK(describe_explanation(pasted) == describe_explanation(whole));
  }
}

TEST_CASE("explain: a close call within the message's rounding says so", "[explain]") {
  // F + R = 2.00 + 18.00 MiB printed, the request 20.00 MiB: equal to the last digit. A hair
  // less and, with no other process (the 0.48 GiB outside is this process's context), capacity.
  const OomExplanation explanation = explain_oom(
      "CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 4.00 GiB of which 2.00 MiB is free. "
      "Of the allocated memory 3.50 GiB is allocated by PyTorch, and 18.00 MiB is reserved by PyTorch but unallocated.");
  REQUIRE(explanation.kind == ExplainedKind::fragmentation);
  CHECK_FALSE(explanation.certain);
  CHECK_THAT(describe_explanation(explanation), Catch::Contains("close call") && Catch::Contains("could be capacity"));
}

TEST_CASE("explain: too little text is no verdict: what was read and what is missing", "[explain]") {
  const OomExplanation part = explain_oom("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 7.79 GiB");
  CHECK_FALSE(part.kind);
  CHECK(figure(part, "request").shown == "2.00 GiB");
  CHECK(part.missing.size() == 3);
  CHECK_THAT(describe_explanation(part), Catch::StartsWith("kind: undecided\n") && Catch::Contains("missing: the device's free bytes"));
  const OomExplanation nothing = explain_oom("Segmentation fault (core dumped)");
  CHECK_FALSE(nothing.kind);
  CHECK(nothing.missing.size() == 1);
}

// TensorFlow: a 4 GiB pool at its 4 GiB limit, three live 1 GiB chunks around two 512 MiB
// holes; 768 MiB fits neither hole and no new region: fragmentation.
constexpr const char* kBfcFragmentation = R"(Allocator (GPU_0_bfc) ran out of memory trying to allocate 768.00MiB (rounded to 805306368)requested by op dense/MatMul
If the cause is memory fragmentation maybe the environment variable 'TF_GPU_ALLOCATOR=cuda_malloc_async' will improve the situation.
Current allocation summary follows.
BFCAllocator dump for GPU_0_bfc
Bin (256): 	Total Chunks: 0, Chunks in use: 0. 0B allocated for chunks. 0B in use in bin. 0B client-requested in use in bin.
Bin (268435456): 	Total Chunks: 5, Chunks in use: 3. 4.00GiB allocated for chunks. 3.00GiB in use in bin. 3.00GiB client-requested in use in bin.
Bin for 768.00MiB was 256.00MiB, Chunk State:
  Size: 512.00MiB | Requested Size: 0B | in_use: 0 | bin_num: 20
Next region of size 4294967296
InUse at 7f1c4f000000 of size 1073741824 next 1
Free  at 7f1c8f000000 of size 536870912 next 2
InUse at 7f1caf000000 of size 1073741824 next 3
Free  at 7f1cef000000 of size 536870912 next 4
InUse at 7f1d0f000000 of size 1073741824 next 18446744073709551615
     Summary of in-use Chunks by size:
3 Chunks of size 1073741824 totalling 3.00GiB
Sum Total of in-use chunks: 3.00GiB
Total bytes in pool: 4294967296 memory_limit_: 4294967296 available bytes: 0 curr_region_allocation_bytes_: 8589934592
Stats:
Limit:                      4294967296
InUse:                      3221225472
MaxInUse:                   3221225472
NumAllocs:                          17
MaxAllocSize:               1073741824
*************************_____________**************************___________***********************
OOM when allocating tensor with shape[4096,49152] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc
)";

// TF 1.x chunk lines, no regions, no pool line: 9 GiB in use + 2 GiB > a 10 GiB limit: capacity.
constexpr const char* kBfcCapacity = R"(Allocator (GPU_0_bfc) ran out of memory trying to allocate 2.00GiB.  Current allocation summary follows.
Chunk at 0x7f94a0000000 of size 4831838208
Chunk at 0x7f95c0000000 of size 4831838208
Free  at 0x7f96e0000000 of size 1073741824
Sum Total of in-use chunks: 9.00GiB
Stats:
Limit:                 10737418240
InUse:                  9663676416
MaxInUse:               9663676416
NumAllocs:                     120
MaxAllocSize:           4831838208
)";

// Growth: a 2 GiB pool under an 8 GiB limit, 1.5 GiB in use; the limit allowed a 1 GiB
// region and the device refused it: reservation.
constexpr const char* kBfcReservation = R"(Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.00GiB (rounded to 1073741824).  Current allocation summary follows.
Next region of size 2147483648
InUse at 7f0000000000 next 1 of size 1610612736
Free  at 7f0060000000 next 18446744073709551615 of size 536870912
Sum Total of in-use chunks: 1.50GiB
total_region_allocated_bytes_: 2147483648 memory_limit_: 8589934592 available bytes: 6442450944 curr_region_allocation_bytes_: 4294967296
Stats:
Limit:                  8589934592
InUse:                  1610612736
)";

std::string with_log_prefix(const std::string& log) {
  std::string out;
  std::size_t line = 0;
  for (std::size_t at = 0; at < log.size();) {
    const std::size_t end = log.find('\n', at);
    const std::string text = log.substr(at, end - at);
    // Stats' lines come without a prefix: one LOG call wrote them all.
    const bool stat = text.find(":  ") != std::string::npos && text.front() != ' ';
    out += (stat ? "" : "2023-05-02 10:11:12." + std::to_string(100000 + line++) + ": I tensorflow/tsl/framework/bfc_allocator.cc:1095] ") + text + "\n";
    at = end == std::string::npos ? log.size() : end + 1;
  }
  return out;
}

TEST_CASE("explain: TensorFlow fragmentation, with and without the log prefixes", "[explain]") {
  for (const std::string& text : {std::string(kBfcFragmentation), with_log_prefix(kBfcFragmentation)}) {
    const OomExplanation explanation = explain_oom(text);
    REQUIRE(explanation.kind == ExplainedKind::fragmentation);
    CHECK(explanation.source == "tensorflow");
    CHECK(figure(explanation, "request").bytes == 805306368);
    CHECK(figure(explanation, "holes").bytes == 2);
    CHECK(figure(explanation, "largest_free").shown == "512.00MiB");
    CHECK(figure(explanation, "free_in_pool").shown == "1.00GiB");
    CHECK(figure(explanation, "new_region_allowed").bytes == 0);
    const std::string answer = describe_explanation(explanation);
    CHECK_THAT(answer, Catch::Contains("live chunks beside the holes: 3 of 1.00GiB"));
    CHECK_THAT(answer, Catch::Contains("try: TF_GPU_ALLOCATOR=cuda_malloc_async"));
    CHECK(explanation.notes.size() == 2);  // the pins and the op: the dump agrees with the totals
  }
}

TEST_CASE("explain: TensorFlow capacity from TF 1.x chunk lines", "[explain]") {
  for (const std::string& text : {std::string(kBfcCapacity), with_log_prefix(kBfcCapacity)}) {
    const std::optional<BfcOomLog> log = read_bfc_oom_log(text);
    REQUIRE(log);
    CHECK(log->regions.size() == 1);
    CHECK(log->regions.front().chunks.size() == 3);
    const OomExplanation explanation = explain_oom(text);
    REQUIRE(explanation.kind == ExplainedKind::capacity);
    CHECK_THAT(describe_explanation(explanation), Catch::Contains("smaller by at least 1.00GiB") && Catch::Contains("memory_limit"));
  }
}

TEST_CASE("explain: TensorFlow reservation, TF 2.x chunk lines", "[explain]") {
  for (const std::string& text : {std::string(kBfcReservation), with_log_prefix(kBfcReservation)}) {
    const OomExplanation explanation = explain_oom(text);
    REQUIRE(explanation.kind == ExplainedKind::reservation);
    CHECK(figure(explanation, "new_region_allowed").shown == "6.00GiB");
    CHECK_THAT(describe_explanation(explanation), Catch::Contains("set_memory_growth"));
  }
}

TEST_CASE("explain: a chunk dump whose sums disagree with the totals is reported", "[explain]") {
  std::string text = kBfcReservation;
  text.replace(text.find("of size 1610612736"), 18, "of size 1073741824");
  const OomExplanation explanation = explain_oom(text);
  REQUIRE(explanation.kind == ExplainedKind::reservation);  // InUse decides
  bool reported = false;
  for (const std::string& note : explanation.notes) {
    reported = reported || note.find("disagrees with the totals") != std::string::npos;
  }
  CHECK(reported);
}

TEST_CASE("explain: TensorFlow text too short, and the warning that is no OOM", "[explain]") {
  const OomExplanation short_log = explain_oom("Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.00GiB (rounded to 1073741824)");
  CHECK_FALSE(short_log.kind);
  CHECK(short_log.missing.size() == 2);  // the limit, the bytes in use
  const OomExplanation warning = explain_oom(
      "Allocator (GPU_0_bfc) ran out of memory trying to allocate 2.27GiB with freed_by_count=0. The caller indicates that "
      "this is not a failure, but may mean that there could be performance gains if more memory were available.");
  CHECK_FALSE(warning.kind);
  CHECK_THAT(warning.missing.front(), Catch::Contains("not a failure"));
}

}  // namespace
}  // namespace allocsim
