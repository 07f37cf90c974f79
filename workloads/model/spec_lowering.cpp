#include "workloads/model/spec_lowering.hpp"

#include <algorithm>
#include <vector>

#include "sim/error.hpp"

namespace allocsim {
namespace {

constexpr ModelKey kGenerationOnly[] = {ModelKey::cache, ModelKey::block};
// Training's or the other frameworks': a generation has no optimizer, gradients or steps.
constexpr ModelKey kNotInGeneration[] = {ModelKey::optimizer,  ModelKey::accumulation, ModelKey::steps,
                                         ModelKey::fused,      ModelKey::keepgrad,     ModelKey::framework,
                                         ModelKey::benchmark,  ModelKey::ddp,          ModelKey::checkpoint,
                                         ModelKey::lora,       ModelKey::lora_targets, ModelKey::qlora,
                                         ModelKey::zero,       ModelKey::world,        ModelKey::fsdp,
                                         ModelKey::packing,    ModelKey::sequence};

// The spec's token for `key`, as printed and quoted: for messages.
std::string token_of(const ModelSpec& spec, ModelKey key) {
  ModelSpec alone = spec;
  alone.given = std::uint64_t{1} << static_cast<unsigned>(key);
  const std::string text = to_string(alone);
  std::string quoted(1, '\'');
  quoted += text.substr(text.find_first_of("_:", spec.model->name.size()) + 1);
  quoted += '\'';
  return quoted;
}

void check_generation(const ModelSpec& spec, const std::string& name) {
  const auto fail = [&](const std::string& why) { throw Error("workload " + name + ": " + why); };
  if (!spec.model->is_decoder()) fail("prefillN and decodeN are a decoder's (llama2_7b, gpt2, decoder:...)");
  if (!spec.names(ModelKey::prefill) || !spec.names(ModelKey::decode)) {
    fail("a generation takes both prefillN (the prompt's tokens) and decodeN (the decode steps)");
  }
  if (spec.options.training) fail("a generation is inference: add infer (MODEL_infer_prefillP_decodeT_bB)");
  for (const ModelKey key : kNotInGeneration) {
    if (spec.names(key)) fail(token_of(spec, key) + " is not for a generation (prefillN sets the prompt's length)");
  }
  if (spec.names(ModelKey::block) && spec.generation.cache != KvCacheKind::paged) fail("block= is cache=paged's");
}

}  // namespace

std::vector<std::int64_t> padded_lengths(const ModelSpec& spec) {
  const LoweringOptions& o = spec.options;
  const auto batch = static_cast<std::size_t>(o.batch);
  std::vector<std::int64_t> lengths;
  for (int micro = 0; micro < o.steps * o.accumulation; ++micro) {
    const std::vector<std::int64_t> drawn = draw_lengths(spec.lengths, batch, static_cast<std::size_t>(micro) * batch);
    lengths.push_back(*std::max_element(drawn.begin(), drawn.end()));
  }
  return lengths;
}

Trace lower_spec(const ModelSpec& spec, std::string name) {
  const auto fail = [&](const std::string& why) { throw Error("workload " + name + ": " + why); };
  if (spec.names(ModelKey::prefill) || spec.names(ModelKey::decode)) {
    check_generation(spec, name);
    return lower_generation(spec.decoder, spec.options, spec.generation, spec.lengths, std::move(name));
  }
  for (const ModelKey key : kGenerationOnly) {
    if (spec.names(key)) fail(token_of(spec, key) + " is a generation's (MODEL_infer_prefillP_decodeT_bB)");
  }
  if ((spec.names(ModelKey::seed) || spec.names(ModelKey::packing)) && !spec.lengths.given()) {
    fail("seed=, packed and padded are for len=MIN:MAX");
  }
  if (!spec.lengths.given()) return lower_model(spec.build(), spec.options, std::move(name));
  if (spec.lengths.packed) {  // B rows of sN tokens every step, however many sequences fill them
    if (spec.lengths.max > spec.sequence) {
      fail("packed rows of " + std::to_string(spec.sequence) + " tokens (sN) hold no sequence of " +
           std::to_string(spec.lengths.max));
    }
    return lower_model(spec.build(), spec.options, std::move(name));
  }
  if (spec.names(ModelKey::sequence)) fail("a padded batch's length is its longest draw: give len= or sN, not both");
  std::vector<Model> shapes;
  for (const std::int64_t length : padded_lengths(spec)) {
    ModelSpec shaped = spec;
    shaped.sequence = length;
    shapes.push_back(shaped.build());
  }
  return lower_model_shapes(shapes, spec.options, std::move(name));
}

}  // namespace allocsim
