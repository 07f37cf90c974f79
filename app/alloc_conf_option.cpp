#include "app/alloc_conf_option.hpp"

namespace allocsim {

void add_alloc_conf_option(boost::program_options::options_description& description, std::string& conf) {
  description.add_options()(
      "alloc-conf", boost::program_options::value(&conf)->value_name("CONF"),
      "PyTorch's allocator as PYTORCH_CUDA_ALLOC_CONF=CONF sets it, in its spelling: "
      "'expandable_segments:True,max_split_size_mb:128,garbage_collection_threshold:0.8,per_process_memory_fraction:0.9'");
}

}  // namespace allocsim
