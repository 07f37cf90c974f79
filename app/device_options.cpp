#include "app/device_options.hpp"

#include "sim/error.hpp"

namespace allocsim {

namespace po = boost::program_options;

void add_device_options(po::options_description& description, DeviceChoice& choice, DeviceLists lists,
                        bool with_profile) {
  const bool many = lists == DeviceLists::many;
  description.add_options()
      ("device,d", po::value(&choice.presets)->value_name(many ? "NAMES" : "NAME"),
       many ? "device presets, a list (see `allocsim devices`)"
            : "a device preset: capacity, context overhead, 2 MiB pages (see `allocsim devices`)")
      ("capacity,c", po::value(&choice.capacities)->value_name(many ? "SIZES" : "SIZE"),
       many ? "device memory, a list or range (16GiB,80GiB or 8GiB:24GiB:4GiB)"
            : "device memory; alone it is all free to the allocators and charged to the byte (default 16GiB; `run` "
              "of one recording: what it could hold at its OOM)")
      ("context", po::value(&choice.context)->value_name("SIZE"), "memory the CUDA context takes before any allocation")
      ("granularity", po::value(&choice.granularity)->value_name("SIZE"),
       "device allocations are charged whole pages of this size, e.g. 2MiB");
  if (with_profile) {
    description.add_options()("device-profile", po::value(&choice.cost_profile)->value_name("FILE"),
                              "the cost model of device calls, as `allocsim calibrate` measured it");
  }
}

OnOom parse_on_oom(const std::string& text) {
  if (text == "stop") return OnOom::stop;
  if (text == "continue") return OnOom::continue_run;
  throw Error("--on-oom " + text + " is not stop or continue");
}

}  // namespace allocsim
