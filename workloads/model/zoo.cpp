#include "workloads/model/zoo.hpp"

#include <array>
#include <string>

#include "sim/error.hpp"
#include "workloads/model/transformer_blocks.hpp"

namespace allocsim {
namespace {

using std::int64_t;

constexpr int64_t kImageNetClasses = 1000;

Node conv_bn_relu(ModelBuilder& b, Node x, const std::string& conv, const std::string& bn, const std::string& relu,
                  int64_t channels, int64_t kernel, int64_t stride, int64_t padding, int64_t groups = 1) {
  x = b.conv(x, conv, channels, kernel, stride, padding, false, groups);
  x = b.batchnorm(x, bn);
  return b.relu(x, relu);
}

// torchvision resnet.py: BasicBlock (expansion 1) or Bottleneck (expansion 4, stride on
// the 3x3: v1.5); the downsample branch runs after the main path, as forward() does.
Model resnet(const char* name, bool bottleneck, std::array<int, 4> blocks) {
  ModelBuilder b(name);
  Node x = b.input({3, 224, 224});
  x = conv_bn_relu(b, x, "conv1", "bn1", "relu", 64, 7, 2, 3);
  x = b.maxpool(x, "maxpool", 3, 2, 1);
  const int64_t expansion = bottleneck ? 4 : 1;
  int64_t in_channels = 64;
  for (int layer = 0; layer < 4; ++layer) {
    const int64_t planes = int64_t{64} << layer;
    for (int block = 0; block < blocks[layer]; ++block) {
      const int64_t stride = layer > 0 && block == 0 ? 2 : 1;
      const std::string p = "layer" + std::to_string(layer + 1) + "." + std::to_string(block) + ".";
      const Node identity = x;
      Node out = x;
      if (bottleneck) {
        out = conv_bn_relu(b, out, p + "conv1", p + "bn1", p + "relu1", planes, 1, 1, 0);
        out = conv_bn_relu(b, out, p + "conv2", p + "bn2", p + "relu2", planes, 3, stride, 1);
        out = b.conv(out, p + "conv3", planes * 4, 1, 1, 0);
        out = b.batchnorm(out, p + "bn3");
      } else {
        out = conv_bn_relu(b, out, p + "conv1", p + "bn1", p + "relu1", planes, 3, stride, 1);
        out = b.conv(out, p + "conv2", planes, 3, 1, 1);
        out = b.batchnorm(out, p + "bn2");
      }
      Node shortcut = identity;
      if (stride != 1 || in_channels != planes * expansion) {
        shortcut = b.conv(identity, p + "downsample.0", planes * expansion, 1, stride, 0);
        shortcut = b.batchnorm(shortcut, p + "downsample.1");
      }
      out = b.add(out, shortcut, p + "add");
      x = b.relu(out, p + "relu");
      in_channels = planes * expansion;
    }
  }
  x = b.avgpool(x, "avgpool");
  x = b.flatten(x, "flatten");
  x = b.linear(x, "fc", kImageNetClasses);
  b.loss(x, "loss");
  return std::move(b).finish();
}

Model resnet18(int64_t) { return resnet("resnet18", false, {2, 2, 2, 2}); }
Model resnet34(int64_t) { return resnet("resnet34", false, {3, 4, 6, 3}); }
Model resnet50(int64_t) { return resnet("resnet50", true, {3, 4, 6, 3}); }
Model resnet101(int64_t) { return resnet("resnet101", true, {3, 4, 23, 3}); }
Model resnet152(int64_t) { return resnet("resnet152", true, {3, 8, 36, 3}); }

// torchvision vgg.py, configuration D, no batch norm.
Model vgg16(int64_t) {
  ModelBuilder b("vgg16");
  Node x = b.input({3, 224, 224});
  int index = 0;
  for (const int64_t channels : {64, 64, 0, 128, 128, 0, 256, 256, 256, 0, 512, 512, 512, 0, 512, 512, 512, 0}) {
    const std::string name = "features." + std::to_string(index);
    if (channels == 0) {
      x = b.maxpool(x, name, 2, 2, 0);
      ++index;
      continue;
    }
    x = b.conv(x, name, channels, 3, 1, 1, true);
    x = b.relu(x, "features." + std::to_string(index + 1));
    index += 2;
  }
  x = b.avgpool(x, "avgpool", 7);
  x = b.flatten(x, "flatten");
  x = b.relu(b.linear(x, "classifier.0", 4096), "classifier.1");
  x = b.dropout(x, "classifier.2");
  x = b.relu(b.linear(x, "classifier.3", 4096), "classifier.4");
  x = b.dropout(x, "classifier.5");
  x = b.linear(x, "classifier.6", kImageNetClasses);
  b.loss(x, "loss");
  return std::move(b).finish();
}

// torchvision mobilenetv2.py: inverted residuals with depthwise 3x3 convolutions; the
// residual is `x + conv(x)`, a new tensor.
Model mobilenet_v2(int64_t) {
  ModelBuilder b("mobilenet_v2");
  Node x = b.input({3, 224, 224});
  x = conv_bn_relu(b, x, "features.0.0", "features.0.1", "features.0.2", 32, 3, 2, 1);
  struct Stage {
    int64_t expand, channels, repeats, stride;
  };
  int64_t in_channels = 32;
  int feature = 1;
  for (const Stage stage : {Stage{1, 16, 1, 1}, Stage{6, 24, 2, 2}, Stage{6, 32, 3, 2}, Stage{6, 64, 4, 2},
                            Stage{6, 96, 3, 1}, Stage{6, 160, 3, 2}, Stage{6, 320, 1, 1}}) {
    for (int64_t i = 0; i < stage.repeats; ++i, ++feature) {
      const int64_t stride = i == 0 ? stage.stride : 1;
      const int64_t hidden = in_channels * stage.expand;
      const std::string p = "features." + std::to_string(feature) + ".conv.";
      Node out = x;
      int part = 0;
      if (stage.expand != 1) {
        const std::string q = p + std::to_string(part++) + ".";
        out = conv_bn_relu(b, out, q + "0", q + "1", q + "2", hidden, 1, 1, 0);
      }
      const std::string q = p + std::to_string(part++) + ".";
      out = conv_bn_relu(b, out, q + "0", q + "1", q + "2", hidden, 3, stride, 1, hidden);
      out = b.conv(out, p + std::to_string(part), stage.channels, 1, 1, 0);
      out = b.batchnorm(out, p + std::to_string(part + 1));
      if (stride == 1 && in_channels == stage.channels) {
        out = b.add(x, out, "features." + std::to_string(feature) + ".add", false);
      }
      x = out;
      in_channels = stage.channels;
    }
  }
  x = conv_bn_relu(b, x, "features.18.0", "features.18.1", "features.18.2", 1280, 1, 1, 0);
  x = b.avgpool(x, "avgpool");
  x = b.flatten(x, "flatten");
  x = b.dropout(x, "classifier.0");
  x = b.linear(x, "classifier.1", kImageNetClasses);
  b.loss(x, "loss");
  return std::move(b).finish();
}

// The seed article's Keras model: Conv2D(32, 3, strides=2, relu) on 224x224x3, then a
// depthwise 3x3 and a pointwise Conv2D(64, 1) (or, plain, one Conv2D(64, 3)), global
// average pooling and Dense(10). Keras convolutions have biases and 'valid' padding.
Model seed_cnn(bool depthwise) {
  ModelBuilder b(depthwise ? "seed_cnn_dw" : "seed_cnn");
  Node x = b.input({3, 224, 224});
  x = b.relu(b.conv(x, "conv2d", 32, 3, 2, 0, true), "conv2d.relu");
  if (depthwise) {
    x = b.relu(b.conv(x, "depthwise_conv2d", 32, 3, 1, 0, true, 32), "depthwise_conv2d.relu");
    x = b.relu(b.conv(x, "conv2d_1", 64, 1, 1, 0, true), "conv2d_1.relu");
  } else {
    x = b.relu(b.conv(x, "conv2d_1", 64, 3, 1, 0, true), "conv2d_1.relu");
  }
  x = b.avgpool(x, "global_average_pooling2d");
  x = b.flatten(x, "flatten");
  x = b.linear(x, "dense", 10);
  b.loss(x, "loss");
  return std::move(b).finish();
}

Model seed_cnn_plain(int64_t) { return seed_cnn(false); }
Model seed_cnn_depthwise(int64_t) { return seed_cnn(true); }

// ---- transformers ------------------------------------------------------------------
// BERT as Hugging Face transformers 4.3x runs it, in eager attention
// (attn_implementation="eager"): every layer materialises its B x heads x S x S scores and
// probabilities. Shapes are per sample: {S, H}. The decoders (GPT-2 among them, with
// attn=eager|sdpa|flash) are built by decoder.cpp from the presets below.

// Scaled dot-product attention on projected q, k, v of {S, H}. The head copies are
// matmul's own: it reshapes the permuted view (B, heads, S, d) to (B*heads, S, d), which
// cannot be a view; bmm saves the copies. BERT adds its padding mask (the gradient passes
// through). (GPT-2 is a decoder preset below: decoder.cpp builds it.)
Node attention(ModelBuilder& b, const std::string& p, Node q, Node k, Node v, Node padding_mask, int64_t sequence,
               int64_t hidden, int64_t heads) {
  const int64_t head_dim = hidden / heads;
  const Node q_heads = b.contiguous(q, p + "query_heads", {heads, sequence, head_dim});
  const Node k_heads = b.contiguous(k, p + "key_heads_t", {heads, head_dim, sequence});
  Node scores = b.matmul(q_heads, k_heads, p + "scores", {heads, sequence, sequence});
  scores = b.pointwise(scores, p + "scale", Pointwise::scale);
  scores = b.pointwise(scores, padding_mask, p + "mask", Pointwise::shift);
  Node probs = b.softmax(scores, p + "softmax");
  probs = b.dropout(probs, p + "attn_dropout");
  const Node v_heads = b.contiguous(v, p + "value_heads", {heads, sequence, head_dim});
  const Node context = b.matmul(probs, v_heads, p + "context", {heads, sequence, head_dim});
  return b.contiguous(context, p + "merge_heads", {sequence, hidden});  // permute(0, 2, 1, 3).contiguous()
}

void check_sequence(const char* model, int64_t sequence, int64_t low, int64_t positions) {
  if (sequence < low || sequence > positions) {
    throw Error(std::string(model) + ": a sequence of " + std::to_string(sequence) + " tokens; it takes " +
                std::to_string(low) + " to " + std::to_string(positions));
  }
}

struct BertConfig {
  int64_t hidden, layers, heads, intermediate;
};

constexpr int64_t kBertVocab = 30522;
constexpr int64_t kBertPositions = 512;
constexpr int64_t kBertTypes = 2;
constexpr int64_t kBertLabels = 2;

// HF BertForSequenceClassification with two labels: BertModel (embeddings, post-LN encoder
// layers with erf GELU, dropout 0.1, the tanh pooler on the first token), then dropout,
// Linear(hidden, 2) and cross entropy: the usual fine-tuning step. The inputs are
// input_ids, token_type_ids and attention_mask (int64, B x S) and one label per sample.
//
// Parameters, base (H 768, 12 layers, 3072) and large (H 1024, 24 layers, 4096):
//   embeddings  (30522 + 512 + 2) x H + 2H (LayerNorm)   23,837,184 | 31,782,912
//   per layer   4 (H^2 + H) (q, k, v, attention.output)   2,362,368 |  4,198,400
//               + (H I + I) + (I H + H) + 2 x 2H          4,725,504 |  8,397,824
//               = 7,087,872 | 12,596,224; x 12 | x 24    85,054,464 | 302,309,376
//   pooler      H^2 + H                                     590,592 |  1,049,600
//   BertModel ("bert.*")                                109,482,240 | 335,141,888
//   classifier  2H + 2                                        1,538 |      2,050
//   parameter_count()                                   109,483,778 | 335,143,938
Model bert(const char* name, BertConfig config, int64_t sequence) {
  check_sequence(name, sequence, 1, kBertPositions);
  const int64_t hidden = config.hidden;
  ModelBuilder b(name);
  const Node ids = b.input({sequence}, "input_ids", 8);
  const Node token_types = b.input({sequence}, "token_type_ids", 8);
  const Node attention_mask = b.input({sequence}, "attention_mask", 8);
  // get_extended_attention_mask: (1 - mask[:, None, None, :].float()) * min, B x 1 x 1 x S.
  const Node mask = b.pointwise(attention_mask, "bert.extended_attention_mask", Pointwise::scale);

  Node x = b.embedding(ids, "bert.embeddings.word_embeddings", kBertVocab, hidden);
  const Node types = b.embedding(token_types, "bert.embeddings.token_type_embeddings", kBertTypes, hidden);
  x = b.add(x, types, "bert.embeddings.add", false);
  const Node positions = b.position_embedding("bert.embeddings.position_embeddings", kBertPositions, sequence, hidden);
  x = b.add(x, positions, "bert.embeddings.add_positions");  // embeddings += position_embeddings
  x = b.layernorm(x, "bert.embeddings.LayerNorm");
  b.add_buffer(x, kBertPositions * 8);  // bert.embeddings.position_ids
  b.add_buffer(x, kBertPositions * 8);  // bert.embeddings.token_type_ids
  x = b.dropout(x, "bert.embeddings.dropout");

  for (int64_t layer = 0; layer < config.layers; ++layer) {
    const std::string p = "bert.encoder.layer." + std::to_string(layer) + ".";
    const Node q = b.linear(x, p + "attention.self.query", hidden);
    const Node k = b.linear(x, p + "attention.self.key", hidden);
    const Node v = b.linear(x, p + "attention.self.value", hidden);
    Node a = attention(b, p + "attention.self.", q, k, v, mask, sequence, hidden, config.heads);
    a = b.linear(a, p + "attention.output.dense", hidden);
    a = b.dropout(a, p + "attention.output.dropout");
    a = b.add(a, x, p + "attention.output.add", false);  // LayerNorm(hidden_states + input_tensor)
    a = b.layernorm(a, p + "attention.output.LayerNorm");
    Node f = b.linear(a, p + "intermediate.dense", config.intermediate);
    f = b.pointwise(f, p + "intermediate.intermediate_act_fn", Pointwise::gelu);
    f = b.linear(f, p + "output.dense", hidden);
    f = b.dropout(f, p + "output.dropout");
    f = b.add(f, a, p + "output.add", false);
    x = b.layernorm(f, p + "output.LayerNorm");
  }
  Node pooled = b.view(x, "bert.pooler.first_token", {hidden});  // hidden_states[:, 0]
  pooled = b.linear(pooled, "bert.pooler.dense", hidden);
  pooled = b.pointwise(pooled, "bert.pooler.activation", Pointwise::tanh);
  pooled = b.dropout(pooled, "dropout");
  const Node logits = b.linear(pooled, "classifier", kBertLabels);
  b.set_returned(logits);
  b.loss(logits, "loss");
  return std::move(b).finish();
}

Model bert_base(int64_t sequence) { return bert("bert_base", {768, 12, 12, 3072}, sequence); }
Model bert_large(int64_t sequence) { return bert("bert_large", {1024, 24, 16, 4096}, sequence); }

constexpr int64_t kGpt2Vocab = 50257;
constexpr int64_t kGpt2Positions = 1024;

// Decoder presets, from each model's Hugging Face config.json (the Hub's meta-llama/
// Llama-2-7b-hf, meta-llama/Meta-Llama-3-8B, mistralai/Mistral-7B-v0.1,
// TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T, Qwen/Qwen2.5-0.5B, gpt2,
// gpt2-medium, gpt2-large, gpt2-xl). Attention is SDPA, transformers' default since 4.36
// (GPT-2's since 4.46); for these shapes it runs the flash or memory-efficient kernel. GPT-2
// small keeps eager attention (attn_implementation="eager", its scores in memory), as the
// zoo has always run it; attn=sdpa or attn=flash changes that. Parameters
// (DecoderConfig::parameter_count, the test sums the graph):
//   llama2_7b     6,738,415,616   llama3_8b   8,030,261,248   mistral_7b  7,241,732,096
//   tinyllama_1b  1,100,048,384   qwen2_5_0_5b  494,032,768 (tied, q/k/v biases)
//   gpt2            124,439,808   gpt2_medium   354,823,168   gpt2_large    774,030,080
//   gpt2_xl       1,557,611,200
constexpr DecoderConfig llama(std::int64_t layers, std::int64_t d_model, std::int64_t heads, std::int64_t kv_heads,
                              std::int64_t d_ff, std::int64_t vocab, std::int64_t positions) {
  DecoderConfig c;
  c.layers = layers;
  c.d_model = d_model;
  c.heads = heads;
  c.kv_heads = kv_heads;
  c.d_ff = d_ff;
  c.vocab = vocab;
  c.positions = positions;
  c.rope = true;
  c.attention = Attention::sdpa;
  return c;
}

constexpr DecoderConfig qwen2(std::int64_t layers, std::int64_t d_model, std::int64_t heads, std::int64_t kv_heads,
                              std::int64_t d_ff, std::int64_t vocab, std::int64_t positions) {
  DecoderConfig c = llama(layers, d_model, heads, kv_heads, d_ff, vocab, positions);
  c.bias = Bias::qkv;
  c.tied = true;
  return c;
}

// GPT2LMHeadModel: learned positions, LayerNorm, gelu_new, biases everywhere, the fused
// c_attn, the LM head tied to wte, dropout 0.1.
constexpr DecoderConfig gpt2_sized(std::int64_t layers, std::int64_t d_model, std::int64_t heads) {
  DecoderConfig c = llama(layers, d_model, heads, heads, 4 * d_model, kGpt2Vocab, kGpt2Positions);
  c.norm = Norm::layernorm;
  c.ffn = Ffn::gelu;
  c.bias = Bias::all;
  c.rope = false;
  c.tied = true;
  c.fused_qkv = true;
  c.dropout = true;
  return c;
}

constexpr DecoderConfig kLlama2_7b = llama(32, 4096, 32, 32, 11008, 32000, 4096);
constexpr DecoderConfig kLlama3_8b = llama(32, 4096, 32, 8, 14336, 128256, 8192);
constexpr DecoderConfig kMistral_7b = llama(32, 4096, 32, 8, 14336, 32000, 32768);
constexpr DecoderConfig kTinyLlama_1b = llama(22, 2048, 32, 4, 5632, 32000, 2048);
constexpr DecoderConfig kQwen2_5_0_5b = qwen2(24, 896, 14, 2, 4864, 151936, 32768);
constexpr DecoderConfig eager(DecoderConfig c) {
  c.attention = Attention::eager;
  return c;
}

constexpr DecoderConfig kGpt2 = eager(gpt2_sized(12, 768, 12));
constexpr DecoderConfig kGpt2Medium = gpt2_sized(24, 1024, 16);
constexpr DecoderConfig kGpt2Large = gpt2_sized(36, 1280, 20);
constexpr DecoderConfig kGpt2Xl = gpt2_sized(48, 1600, 25);
constexpr DecoderConfig kDecoder{};  // every dimension from the spec

// Default sequence lengths: what the Hugging Face example scripts use, run_glue's
// max_seq_length of 128 for BERT fine-tuning and run_clm's block size of 1024 for GPT-2.
const std::array kZoo{
    ZooModel{"resnet18", "torchvision ResNet-18", resnet18, 0, 0},
    ZooModel{"resnet34", "torchvision ResNet-34", resnet34, 0, 0},
    ZooModel{"resnet50", "torchvision ResNet-50 v1.5", resnet50, 0, 0},
    ZooModel{"resnet101", "torchvision ResNet-101 v1.5", resnet101, 0, 0},
    ZooModel{"resnet152", "torchvision ResNet-152 v1.5", resnet152, 0, 0},
    ZooModel{"vgg16", "torchvision VGG-16 (no batch norm)", vgg16, 0, 0},
    ZooModel{"mobilenet_v2", "torchvision MobileNetV2 (depthwise separable)", mobilenet_v2, 0, 0},
    ZooModel{"seed_cnn", "the seed article's small CNN, with a plain 3x3 convolution", seed_cnn_plain, 0, 0},
    ZooModel{"seed_cnn_dw", "the seed article's small CNN, depthwise separable", seed_cnn_depthwise, 0, 0},
    ZooModel{"bert_base", "Hugging Face BERT-base (BertModel) + a 2-label classifier, eager attention, default S 128",
             bert_base, 128, kBertPositions},
    ZooModel{"bert_large", "Hugging Face BERT-large (BertModel) + a 2-label classifier, eager attention, default S 128",
             bert_large, 128, kBertPositions},
    ZooModel{"gpt2", "Hugging Face GPT-2 small (GPT2LMHeadModel, tied LM head) as a decoder preset, eager attention, "
             "default S 1024", nullptr, 1024, kGpt2Positions, &kGpt2},
    ZooModel{"decoder", "a decoder-only LM from its configuration: decoder:layers=L,d_model=D,heads=H,d_ff=F,vocab=V,...",
             nullptr, 1024, 0, &kDecoder},
    ZooModel{"llama2_7b", "Llama 2 7B (LlamaForCausalLM), SDPA attention, default S 1024", nullptr, 1024, 4096,
             &kLlama2_7b},
    ZooModel{"llama3_8b", "Llama 3 8B (grouped-query, 8 KV heads), SDPA attention, default S 1024", nullptr, 1024, 8192,
             &kLlama3_8b},
    ZooModel{"mistral_7b", "Mistral 7B v0.1 (grouped-query, 8 KV heads), SDPA attention, default S 1024", nullptr, 1024,
             32768, &kMistral_7b},
    ZooModel{"tinyllama_1b", "TinyLlama 1.1B (grouped-query, 4 KV heads), SDPA attention, default S 1024", nullptr, 1024,
             2048, &kTinyLlama_1b},
    ZooModel{"qwen2_5_0_5b", "Qwen2.5 0.5B (tied, q/k/v biases, 2 KV heads), SDPA attention, default S 1024", nullptr,
             1024, 32768, &kQwen2_5_0_5b},
    ZooModel{"gpt2_medium", "GPT-2 medium as a decoder preset (tied, learned positions), SDPA, default S 1024", nullptr,
             1024, kGpt2Positions, &kGpt2Medium},
    ZooModel{"gpt2_large", "GPT-2 large as a decoder preset (tied, learned positions), SDPA, default S 1024", nullptr,
             1024, kGpt2Positions, &kGpt2Large},
    ZooModel{"gpt2_xl", "GPT-2 XL as a decoder preset (tied, learned positions), SDPA, default S 1024", nullptr, 1024,
             kGpt2Positions, &kGpt2Xl},
};

}  // namespace

std::span<const ZooModel> zoo() { return kZoo; }

const ZooModel* find_zoo_model(std::string_view name) {
  for (const ZooModel& model : kZoo) {
    if (model.name == name) return &model;
  }
  return nullptr;
}

}  // namespace allocsim
