// The option groups several commands share: the device (--device, --capacity, --context,
// --granularity, --device-profile) and --on-oom. One spelling and one help line each.
#pragma once

#include <string>

#include <boost/program_options.hpp>

#include "sim/engine.hpp"
#include "studies/scenario_choice.hpp"

namespace allocsim {

enum class DeviceLists : bool { one, many };

// Binds the device options to `choice`; with DeviceLists::many --device and --capacity
// take lists (a sweep's axes). The cost profile is offered where `with_profile`.
void add_device_options(boost::program_options::options_description& description, DeviceChoice& choice,
                        DeviceLists lists, bool with_profile);

// "stop" or "continue"; Error on anything else.
OnOom parse_on_oom(const std::string& text);

}  // namespace allocsim
