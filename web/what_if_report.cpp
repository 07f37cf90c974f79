#include "web/what_if_report.hpp"

#include <filesystem>
#include <string>
#include <vector>

#include "studies/replay_from_recording.hpp"
#include "studies/run_report.hpp"

namespace allocsim {

std::string what_if_report(const TorchRecording& recording, const std::string& name,
                           std::span<const RecordingPolicy> policies, std::optional<Bytes> capacity) {
  const WhatIf what_if = replay_from_recording(recording, policies, capacity, {}, true);
  const std::vector<ReportedRun> reported = what_if_reported(what_if, name);
  // What a user types for the same page (app/replay_command.cpp's title, its command line).
  const std::string file = std::filesystem::path(name).filename().string();
  std::string command = "replay " + file + " --policy ";
  for (std::size_t i = 0; i < policies.size(); ++i) command += (i == 0 ? "" : ",") + policies[i].text();
  if (capacity) command += " --capacity " + std::to_string(*capacity);  // bytes: exact, no space to quote
  command += " --report " + std::filesystem::path(file).stem().string() + ".html";
  const std::string title = "allocsim replay: " + file;
  return run_report_data(title, command, reported);
}

}  // namespace allocsim
