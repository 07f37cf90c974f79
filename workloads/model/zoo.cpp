#include "workloads/model/zoo.hpp"

#include <array>
#include <string>

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

Model resnet18() { return resnet("resnet18", false, {2, 2, 2, 2}); }
Model resnet34() { return resnet("resnet34", false, {3, 4, 6, 3}); }
Model resnet50() { return resnet("resnet50", true, {3, 4, 6, 3}); }
Model resnet101() { return resnet("resnet101", true, {3, 4, 23, 3}); }
Model resnet152() { return resnet("resnet152", true, {3, 8, 36, 3}); }

// torchvision vgg.py, configuration D, no batch norm.
Model vgg16() {
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
Model mobilenet_v2() {
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

Model seed_cnn_plain() { return seed_cnn(false); }
Model seed_cnn_depthwise() { return seed_cnn(true); }

const std::array kZoo{
    ZooModel{"resnet18", "torchvision ResNet-18", resnet18},
    ZooModel{"resnet34", "torchvision ResNet-34", resnet34},
    ZooModel{"resnet50", "torchvision ResNet-50 v1.5", resnet50},
    ZooModel{"resnet101", "torchvision ResNet-101 v1.5", resnet101},
    ZooModel{"resnet152", "torchvision ResNet-152 v1.5", resnet152},
    ZooModel{"vgg16", "torchvision VGG-16 (no batch norm)", vgg16},
    ZooModel{"mobilenet_v2", "torchvision MobileNetV2 (depthwise separable)", mobilenet_v2},
    ZooModel{"seed_cnn", "the seed article's small CNN, with a plain 3x3 convolution", seed_cnn_plain},
    ZooModel{"seed_cnn_dw", "the seed article's small CNN, depthwise separable", seed_cnn_depthwise},
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
