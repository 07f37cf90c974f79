// allocsim explain's readers and verdict on any pasted text: PyTorch's OOM message, the BFC
// log, the answer in text and JSON. Nothing is bad input here (a text too short is an
// answer), so any exception, sanitizer report or hang is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "studies/bfc_oom_log.hpp"
#include "studies/oom_explanation.hpp"
#include "studies/torch_oom_message.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  static_cast<void>(allocsim::read_torch_oom_message(text));
  static_cast<void>(allocsim::read_bfc_oom_log(text));
  const allocsim::OomExplanation explanation = allocsim::explain_oom(text);
  static_cast<void>(allocsim::describe_explanation(explanation));
  static_cast<void>(allocsim::explanation_json(explanation));
  return 0;
}
