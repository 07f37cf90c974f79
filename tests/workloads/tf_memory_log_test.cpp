// TensorFlow's __LOG_MEMORY__ lines (TF_CPP_VMODULE=log_memory=2): allocations paired by
// allocation id within one GPU's allocator; the fixture is hand-written in the text format
// log_memory.cc prints, between lines of other logging.
#include <string>

#include <catch2/catch.hpp>

#include "sim/error.hpp"
#include "workloads/catalogue.hpp"
#include "workloads/tf_memory_log.hpp"

namespace allocsim {
namespace {

using Catch::Contains;

const std::string kFixture = std::string(ALLOCSIM_TEST_DATA) + "/tf_memory.log";

std::string line(const std::string& record) {
  return "2024-05-01 10:00:00.000100: I tensorflow/core/framework/log_memory.cc:26] __LOG_MEMORY__ " + record + "\n";
}
std::string tensor(int id, int bytes, const std::string& allocator = "GPU_0_bfc") {
  return line("MemoryLogTensorAllocation { step_id: 1 kernel_name: \"k\" tensor { dtype: DT_FLOAT allocation_description { "
              "requested_bytes: " + std::to_string(bytes) + " allocator_name: \"" + allocator + "\" allocation_id: " +
              std::to_string(id) + " } } }");
}

TEST_CASE("tf log: tensor and raw allocations of the GPU allocator, paired by id", "[tf-log]") {
  const TfMemoryLog log = read_tf_memory_log_file(kFixture);
  const Trace& trace = log.trace;
  CHECK(log.allocator == "GPU_0_bfc");
  CHECK(log.unmatched_frees == 1);    // id 99, never allocated in the log
  CHECK(log.other_allocators == 1);   // the cpu allocator's tensor
  REQUIRE(trace.events.size() == 7);
  CHECK(trace.bytes_of(trace.events[0].id) == 1024);
  CHECK(trace.bytes_of(trace.events[1].id) == 1280);
  CHECK(trace.bytes_of(trace.events[2].id) == 4000);  // MemoryLogRawAllocation num_bytes
  CHECK(trace.events[3].op == Op::free);
  CHECK(trace.events[3].id == trace.events[2].id);
  CHECK(trace.events[4].id == trace.events[1].id);
  CHECK(trace.bytes_of(trace.events[5].id) == 40);  // requested, not the 256 allocated
  CHECK(trace.live_lower_bound == 1024 + 1280 + 4000);
  // Times from the prefixes: TensorFlow's, then glog's; 10:00:00.000200 is 0.
  CHECK(trace.events[1].time == 200'000);
  CHECK(trace.events[5].time == 1'000'000'000);
  // Steps: what precedes the first MemoryLogStep is part of step 1; step 2 starts at id 4.
  CHECK(trace.info.step_starts == std::vector<std::size_t>{0, 5});
  REQUIRE(trace.layer_names.size() == 4);
  CHECK(trace.layer_names[trace.layer[index_of(trace.events[1].id)]] == "dense/MatMul");
  CHECK(trace.layer_names[trace.layer[index_of(trace.events[2].id)]] == "xla_scratch");
  CHECK(trace.layer_names[trace.layer[index_of(trace.events[5].id)]] == "dense/BiasAdd{\"x\"}");
  CHECK(find_reader(kFixture).name == "tf-memory-log");
  CHECK(load_workload(kFixture).events.size() == 7);
}

TEST_CASE("tf log: one GPU's allocator, chosen as snapshots choose", "[tf-log]") {
  const std::string two = tensor(1, 100) + tensor(1, 200, "GPU_1_bfc") + tensor(2, 300, "GPU_1_bfc");
  CHECK_THROWS_WITH(parse_tf_memory_log(two, "two.log"),
                    Contains("two.log: 2 devices have allocations: 0 (1 allocations), 1 (2 allocations)"));
  const TfMemoryLog second = parse_tf_memory_log(two, "two.log", 1);
  CHECK(second.allocator == "GPU_1_bfc");
  CHECK(second.trace.live_lower_bound == 500);
  CHECK_THROWS_WITH(parse_tf_memory_log(two, "two.log", 4), Contains("no allocations on device 4"));
  CHECK_THROWS_WITH(parse_tf_memory_log(tensor(1, 100, "cpu"), "cpu.log"),
                    Contains("no allocations of a GPU allocator (GPU_N_bfc); allocators: cpu"));
}

TEST_CASE("tf log: a malformed record names file and line", "[tf-log]") {
  CHECK_THROWS_WITH(parse_tf_memory_log("I0501 10:00:00.000001 1 x.cc:1] no memory here\n", "none.log"),
                    Contains("none.log: no __LOG_MEMORY__ lines") && Contains("log_memory=2"));
  CHECK_THROWS_WITH(parse_tf_memory_log(tensor(1, 100) + line("MemoryLogTensorAllocation { tensor { "), "bad.log"),
                    Contains("bad.log:2: a __LOG_MEMORY__ line without a { proto }"));
  CHECK_THROWS_WITH(parse_tf_memory_log(line("MemoryLogSomethingNew { a: 1 }"), "new.log"),
                    Contains("new.log:1: unknown record 'MemoryLogSomethingNew'"));
  CHECK_THROWS_WITH(parse_tf_memory_log(line("MemoryLogRawAllocation { num_bytes: -5 allocator_name: \"GPU_0_bfc\" }"),
                                            "neg.log"),
                    Contains("neg.log:1: num_bytes '-5' is negative"));
  // proto3 prints no allocation_id when it is 0: an allocator that numbers nothing.
  CHECK_THROWS_WITH(parse_tf_memory_log(line("MemoryLogRawAllocation { num_bytes: 8 allocator_name: \"GPU_0_bfc\" }"),
                                            "zero.log"),
                    Contains("zero.log:1: allocation id 0: GPU_0_bfc numbers no allocations"));
  CHECK_THROWS_WITH(parse_tf_memory_log(tensor(1, 100) + tensor(1, 200), "twice.log"),
                    Contains("twice.log:2: allocation id 1 of 200 B while it is live with 100 B"));
  // The same allocation logged twice is one.
  const TfMemoryLog repeated = parse_tf_memory_log(tensor(1, 100) + tensor(1, 100), "twice.log");
  CHECK(repeated.repeated_allocations == 1);
  CHECK(repeated.trace.events.size() == 1);
}

TEST_CASE("tf log: claimed by a __LOG_MEMORY__ line, or a .log name", "[tf-log]") {
  CHECK(claims_tf_memory_log("stderr.txt", "I0501 ...] __LOG_MEMORY__ MemoryLogStep { step_id: 1 }") == Claim::by_content);
  CHECK(claims_tf_memory_log("train.log", "") == Claim::by_name);
  CHECK(claims_tf_memory_log("trace.csv", "time_ns,op,id,bytes\n") == Claim::no);
}

}  // namespace
}  // namespace allocsim
