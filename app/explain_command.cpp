// `allocsim explain [TEXT | FILE | -] [--json]`: the command around explain_oom().
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "app/commands.hpp"
#include "app/parse_options.hpp"
#include "sim/error.hpp"
#include "studies/oom_explanation.hpp"
#include "workloads/text_lines.hpp"

namespace allocsim {

namespace po = boost::program_options;

namespace {

constexpr const char* kExplainUsage = R"(allocsim explain: why did this run out of memory? A pasted OOM message or log, judged.

Usage:
  allocsim explain 'MESSAGE'          the message itself, quoted (or unquoted: the words are joined)
  allocsim explain FILE               a file holding it (a log, a traceback, a notebook's output)
  allocsim explain [-] < FILE         standard input: paste, then Ctrl-D
  allocsim explain ... --json         the same answer as one JSON object

Reads:
  PyTorch's `CUDA out of memory. Tried to allocate X` in every version's wording:
    up to 1.3   (GPU 0; T total capacity; A already allocated; F free; C cached)
    1.4 to 2.0  (GPU 0; T total capacity; A already allocated; F free; [L allowed;] R reserved in total by PyTorch)
    2.1 on      GPU 0 has a total capacity of T of which F is free. ... this process has P memory in use.
                Of the allocated memory A is allocated by PyTorch, and R is reserved by PyTorch but unallocated.
  TensorFlow's and XLA's BFC log: `ran out of memory trying to allocate X (rounded to N)`, the bins,
    the chunk dump (`Chunk at`, `InUse at`, `Free  at`), `Sum Total of in-use chunks`,
    `memory_limit_:` and the `Stats:` block (Limit, InUse, ...); the op's `OOM when allocating tensor
    with shape[64,3,512,512] and type half` (the request: the shape's product times the type's size)
    and the driver's `failed to allocate ... from device: CUDA_ERROR_OUT_OF_MEMORY`, summary or not.
  Any line prefix (RuntimeError:, torch.OutOfMemoryError:, [rank2]:, a log timestamp, TensorFlow's
  `I .../bfc_allocator.cc:905]`), lines wrapped anywhere, and the hints and links after the message.

Answers:
  kind: inconsistent | fragmentation | reservation | capacity   first (judged in that order), then
  the arithmetic in your units: the request, the device's free bytes, the cache's free bytes, and
  who holds the rest: this process outside PyTorch (its CUDA context and libraries, never another
  holder) and other processes. Then what would have to change for the request to fit, and the
  settings to try (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, a smaller batch, memory_limit,
  set_memory_growth, stopping the other process when one holds memory). `inconsistent`: the
  device's free bytes alone would hold the request, so the message shows no shortage PyTorch could
  see. A comparison within the message's rounding is said to be a close call. Text too short to
  decide gives `kind: undecided`, what was read and what is missing.

Examples:
  allocsim explain 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 15.77 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process has 14.74 GiB memory in use. Of the allocated memory 11.50 GiB is allocated by PyTorch, and 2.81 GiB is reserved by PyTorch but unallocated.'
  allocsim explain train.log
  kubectl logs trainer-0 | allocsim explain --json

Exit status: 0 with a kind, 2 when the text holds too little to decide (or on bad input).
)";

std::string read_input(const std::vector<std::string>& given, std::istream& in) {
  if (given.empty() || (given.size() == 1 && given.front() == "-")) return read_text(in, "stdin");
  if (given.size() == 1) {
    const std::string& argument = given.front();
    std::error_code error;
    if (std::filesystem::is_directory(argument, error)) {
      throw Error(argument + ": is a directory (give a file holding the message, the message itself in quotes, or - for "
                  "standard input)");
    }
    if (std::filesystem::exists(argument, error)) return read_text_file(argument);
    if (argument.find_first_of(" \t\n") == std::string::npos) {
      throw Error(argument + ": no such file (give the message itself in quotes, a file, or - for standard input)");
    }
    return argument;
  }
  std::string text;
  for (const std::string& word : given) text += (text.empty() ? "" : " ") + word;
  return text;
}

}  // namespace

int explain_command(std::span<const std::string> args, std::ostream& out, std::istream& in) {
  std::vector<std::string> given;
  po::options_description description("Options");
  description.add_options()("help,h", "this help")("json", "the answer as one JSON object")(
      "text", po::value(&given)->value_name("TEXT|FILE|-"), "the message, a file, or - for standard input");
  po::positional_options_description positional;
  positional.add("text", -1);
  const po::variables_map values = parse_options(args, description, positional);
  if (values.count("help")) {
    out << kExplainUsage << '\n' << description;
    return 0;
  }
  const OomExplanation explanation = explain_oom(read_input(given, in));
  out << (values.count("json") ? explanation_json(explanation) : describe_explanation(explanation));
  return explanation.kind ? 0 : 2;
}

}  // namespace allocsim
