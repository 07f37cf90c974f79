// `allocsim calibrate`: measure the device's allocation costs and write a device profile
// (JSON) that `--device-profile FILE` loads into the simulator's cost model.
#include <filesystem>

#include <boost/program_options.hpp>

#include "app/commands.hpp"
#include "app/parse_options.hpp"
#include "real_gpu/calibration.hpp"
#include "sim/atomic_file.hpp"
#include "sim/error.hpp"
#include "sim/output_paths.hpp"

namespace allocsim {

int calibrate_command(std::span<const std::string> args, std::ostream& out, const DeviceOpener& open) {
  std::string output = "results/validation/device_profile.json";
  std::string max_size = "4GiB";
  std::string copy_size = "1GiB";
  std::string host_memory = "80GiB";
  CalibrationOptions options;
  BackendChoice choice;
  namespace po = boost::program_options;
  po::options_description description("Options");
  description.add_options()
      ("help,h", "this help")
      ("out,o", po::value(&output)->value_name("FILE"), "the profile (default results/validation/device_profile.json)")
      ("backend", po::value(&choice.backend)->value_name("cuda|host"), "cuda: the GPU (default); host: the stand-in")
      ("gpu", po::value(&choice.gpu)->value_name("N"), "the CUDA device to use (default 0)")
      ("max-size", po::value(&max_size)->value_name("SIZE"),
       "largest allocation timed (default 4GiB; at most a quarter of free memory)")
      ("copy-size", po::value(&copy_size)->value_name("SIZE"), "bytes per timed copy (default 1GiB)")
      ("repeat", po::value(&options.repeats)->value_name("N"), "timings per size (default 5)")
      ("host-memory", po::value(&host_memory)->value_name("SIZE"), "the host stand-in's total memory (default 80GiB)");
  const po::variables_map values = parse_options(args, description);
  if (values.count("help")) {
    out << "allocsim calibrate: time cudaMalloc/cudaFree against size, VMM map/unmap and device copies, and\n"
           "write a device profile for --device-profile.\n\nUsage:\n  allocsim calibrate [--out FILE] [options]\n\n"
        << description << '\n';
    return 0;
  }
  options.max_bytes = parse_bytes(max_size);
  options.copy_bytes = parse_bytes(copy_size);
  choice.host_memory = parse_bytes(host_memory);
  if (options.repeats < 1) throw Error("--repeat must be 1 or more");
  const std::filesystem::path folder = std::filesystem::path(output).parent_path();
  if (!folder.empty()) std::filesystem::create_directories(folder);
  OutputPaths paths;
  paths.output("--out", output);
  paths.check();
  const std::unique_ptr<DeviceApi> api = open(choice);
  const CostProfile profile = calibrate(*api, options);
  write_file_atomically(output, [&](std::ostream& file) { write_cost_profile(file, profile); });
  const CostModel& cost = profile.cost;
  out << "device " << profile.device << " (" << profile.backend << "): " << format_bytes(profile.total_bytes)
      << ", in use before " << format_bytes(profile.context_bytes) << ", sm_" << profile.compute_capability << '\n'
      << "  malloc: " << cost.malloc_fixed_ns << " ns + " << cost.malloc_ns_per_byte * double(1_GiB) << " ns/GiB\n"
      << "  free:   " << cost.free_fixed_ns << " ns + " << cost.free_ns_per_byte * double(1_GiB) << " ns/GiB\n"
      << "  copy:   " << cost.copy_bytes_per_ns << " bytes/ns\n";
  if (profile.map_granularity != 0) {
    out << "  map:    " << profile.map.fixed_ns << " ns + " << profile.map.ns_per_byte * double(1_GiB)
        << " ns/GiB (pages of " << format_bytes(profile.map_granularity) << ")\n"
        << "  unmap:  " << profile.unmap.fixed_ns << " ns + " << profile.unmap.ns_per_byte * double(1_GiB) << " ns/GiB\n";
  }
  out << "wrote " << output << " (" << profile.samples.size() << " samples)\n";
  return 0;
}

}  // namespace allocsim
