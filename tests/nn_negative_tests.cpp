// The nn library's bad input (as negative_tests.cpp for the rest; this file
// is built only with the nn library): each layer builder and op names the
// layer, the shapes it got and what it needs; bad labels name the row; bad
// model configurations say what is valid; malformed dataset files are
// named with what is wrong and what is expected.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "cachedarrays/cachedarrays.hpp"
#include "cachedarrays/nn/data.hpp"
#include "cachedarrays/nn/layers.hpp"
#include "cachedarrays/nn/models.hpp"
#include "nn_data_files.hpp"
#include "nn_gradcheck.hpp"
#include "nn_test_support.hpp"

namespace {

namespace ca = cachedarrays;
namespace nn = cachedarrays::nn;
namespace fs = std::filesystem;
using test::Bytes, test::cifar_records, test::contains, test::invalid_argument_message, test::mnist_images,
    test::mnist_labels, test::TempDir, test::tensor;

// `f` throws invalid_argument with a message naming each of `parts` (one
// check each, so a failure shows which part is missing).
template <typename F>
void check_rejected(F&& f, std::initializer_list<std::string> parts) {
  const std::string message = invalid_argument_message(f);
  for (const std::string& part : parts) test::check_contains(message, part);
}

// The message with which build_model rejects `config` ("" if it does not).
std::string model_message(const nn::ModelConfig& config) {
  return invalid_argument_message([&] { (void)nn::build_model(config); });
}

}  // namespace

// ---- layers and ops ----------------------------------------------------------

TEST_CASE("nn batch_norm: output_dims validation") {
  nn::Graph g;
  const std::string rank = invalid_argument_message([&] { nn::batch_norm(g, "bn1", g.input("flat", {4, 3})); });
  CHECK(contains(rank, "batch_norm 'bn1'"));
  CHECK(contains(rank, "[4, 3]"));
  CHECK(g.values_with_role(nn::ValueRole::parameter).empty());

  nn::batch_norm(g, "bn", g.input("x", {4, 3, 5, 5}));
  const nn::Op& op = *g.nodes().back().op;
  CHECK(op.output_dims(std::vector<nn::Dims>{{4, 3, 5, 5}, {3}, {3}}) == std::vector<nn::Dims>{{4, 3, 5, 5}});
  check_rejected(
      [&] {
        (void)op.output_dims(std::vector<nn::Dims>{{4, 3, 5, 5}, {4}, {3}});
      },
      {"batch_norm 'bn'", "weight", "[4]", "[4, 3, 5, 5]"});
  CHECK(contains(invalid_argument_message([&] {
                   (void)op.output_dims(std::vector<nn::Dims>{{4, 3, 5, 5}, {3}, {3, 1}});
                 }),
                 "bias"));
  CHECK(contains(invalid_argument_message([&] {
                   (void)op.output_dims(std::vector<nn::Dims>{{4, 3, 5, 5}, {3}});
                 }),
                 "takes 3 inputs"));
  CHECK_FALSE(invalid_argument_message([&] {
                (void)op.output_dims(std::vector<nn::Dims>{{4, 3, 25}, {3}, {3}});
              }).empty());
}

TEST_CASE("nn concat: output_dims validation") {
  nn::Graph g;
  const nn::ValueId a = g.input("a", {2, 3, 4, 4});
  const std::string h = invalid_argument_message([&] { nn::concat(g, "cat", {a, g.input("b", {2, 5, 4, 5})}); });
  CHECK(h.find("concat 'cat'") != std::string::npos);
  CHECK(h.find("input 1 [2, 5, 4, 5]") != std::string::npos);
  CHECK(h.find("[2, 3, 4, 4]") != std::string::npos);
  CHECK_FALSE(invalid_argument_message([&] { nn::concat(g, "cat", {a, g.input("c", {3, 3, 4, 4})}); }).empty());
  CHECK_FALSE(invalid_argument_message([&] { nn::concat(g, "cat", {a, g.input("d", {2, 3, 16})}); }).empty());
  CHECK_FALSE(invalid_argument_message([&] { nn::concat(g, "cat", {}); }).empty());
  CHECK_FALSE(invalid_argument_message([&] { nn::concat(g, "cat", {g.input("e", {5})}); }).empty());
  CHECK(g.nodes().empty());
  CHECK(g.value(nn::concat(g, "one", {a})).dims == nn::Dims{2, 3, 4, 4});
}

TEST_CASE("nn conv: output_dims validation") {
  nn::Graph g;
  const nn::ValueId x = g.input("x", {2, 3, 6, 6});
  const std::string rank = invalid_argument_message([&] { nn::conv2d(g, "c1", g.input("flat", {2, 3, 36}), {4}); });
  CHECK(contains(rank, "conv 'c1'"));
  CHECK(contains(rank, "[2, 3, 36]"));
  const std::string big = invalid_argument_message([&] { nn::conv2d(g, "c2", x, {4, 9, 1, 1}); });
  CHECK(contains(big, "conv 'c2'"));
  CHECK(contains(big, "[9, 9]"));
  CHECK(contains(big, "[2, 3, 6, 6]"));
  CHECK(invalid_argument_message([&] { nn::conv2d(g, "c3", x, {4, 8, 1, 1}); }).empty());  // 6 + 2 = 8 fits
  CHECK_FALSE(invalid_argument_message([&] { nn::conv2d(g, "c4", x, {0, 3, 1, 1}); }).empty());
  CHECK_FALSE(invalid_argument_message([&] { nn::conv2d(g, "c5", x, {4, 3, 0, 1}); }).empty());
  CHECK_FALSE(invalid_argument_message([&] { nn::conv2d(g, "c6", x, {4, 3, 1, -1}); }).empty());
  CHECK_FALSE(invalid_argument_message([&] { nn::conv2d(g, "c7", x, {4, 0, 1, 0}); }).empty());
  // A failed builder call leaves no stray parameters behind.
  CHECK(g.nodes().size() == 1);
  CHECK(g.parameter_count() == 4 * 3 * 8 * 8);

  // The op itself checks what the graph hands it.
  nn::Graph h;
  nn::conv2d(h, "conv", h.input("x", {2, 3, 6, 6}), {4, 3, 1, 1, true});
  const nn::Op& op = *h.nodes().back().op;
  CHECK(op.output_dims(std::vector<nn::Dims>{{2, 3, 6, 6}, {4, 3, 3, 3}, {4}}) == std::vector<nn::Dims>{{2, 4, 6, 6}});
  check_rejected(
      [&] {
        (void)op.output_dims(std::vector<nn::Dims>{{2, 5, 6, 6}, {4, 3, 3, 3}, {4}});
      },
      {"conv 'conv'", "[4, 3, 3, 3]", "[2, 5, 6, 6]", "[4, 5, 3, 3]"});
  CHECK(contains(invalid_argument_message([&] {
                   (void)op.output_dims(std::vector<nn::Dims>{{2, 3, 6, 6}, {4, 3, 3, 3}, {5}});
                 }),
                 "bias"));
  CHECK(contains(invalid_argument_message([&] {
                   (void)op.output_dims(std::vector<nn::Dims>{{2, 3, 6, 6}, {4, 3, 3, 3}});
                 }),
                 "takes 3 inputs"));
}

TEST_CASE(
    "nn conv: rectangular kernels: a bad kernel_width or padding_width, or a kernel longer than the padded "
    "input along either axis, is refused by name") {
  nn::Graph g;
  const nn::ValueId x = g.input("x", {2, 3, 6, 6});
  // The message shows the value given, not the square default it falls back to.
  check_rejected([&] { nn::conv2d(g, "w", x, {.out_channels = 4, .kernel = 1, .kernel_width = -1}); },
                 {"conv 'w'", "kernel_width -1", "kernel_width at least 0"});
  check_rejected(
      [&] { nn::conv2d(g, "p", x, {.out_channels = 4, .kernel = 1, .kernel_width = 7, .padding_width = -2}); },
      {"conv 'p'", "kernel_width 7", "padding_width -2", "padding_width at least -1"});
  // 1x9 over a width of 6 + 2 * 1; 9x1 over a height of 6 + 2 * 1.
  check_rejected(
      [&] { nn::conv2d(g, "wide", x, {.out_channels = 4, .kernel = 1, .kernel_width = 9, .padding_width = 1}); },
      {"conv 'wide'", "[1, 9]", "[2, 3, 6, 6]", "padding 0x1"});
  check_rejected(
      [&] {
        nn::conv2d(g, "tall", x, {.out_channels = 4, .kernel = 9, .padding = 1, .kernel_width = 1, .padding_width = 0});
      },
      {"conv 'tall'", "[9, 1]", "padding 1x0"});
  // The padding of the other axis does not help.
  check_rejected(
      [&] {
        nn::conv2d(g, "across", x,
                   {.out_channels = 4, .kernel = 1, .padding = 2, .kernel_width = 9, .padding_width = 0});
      },
      {"conv 'across'", "[1, 9]", "padding 2x0"});
  CHECK(g.nodes().empty());
  CHECK(g.parameter_count() == 0);  // no stray parameters
  // Just fitting: 8x1 over 6 + 2 * 1 rows, 1x10 over 6 + 2 * 2 columns.
  CHECK(g.value(nn::conv2d(g, "fits_tall", x,
                           {.out_channels = 4, .kernel = 8, .padding = 1, .kernel_width = 1, .padding_width = 0}))
            .dims == nn::Dims{2, 4, 1, 6});
  CHECK(g.value(nn::conv2d(g, "fits_wide", x, {.out_channels = 4, .kernel = 1, .kernel_width = 10, .padding_width = 2}))
            .dims == nn::Dims{2, 4, 6, 1});
  // The op checks the weight's height and width in that order.
  const nn::Op& op = *g.nodes().front().op;
  check_rejected(
      [&] {
        (void)op.output_dims(std::vector<nn::Dims>{{2, 3, 6, 6}, {4, 3, 1, 8}});
      },
      {"conv 'fits_tall'", "[4, 3, 1, 8]", "[4, 3, 8, 1]", "kernel height, kernel width"});
}

TEST_CASE("nn relu: output_dims validation") {
  nn::Graph g;
  nn::relu(g, "r", g.input("x", {2, 3}));
  nn::Op& op = *g.nodes().back().op;
  CHECK(op.output_dims(std::vector<nn::Dims>{{2, 3}}) == std::vector<nn::Dims>{{2, 3}});
  const std::string two = invalid_argument_message([&] { (void)op.output_dims(std::vector<nn::Dims>{{2}, {2}}); });
  CHECK(two.find("relu 'r'") != std::string::npos);
  CHECK(two.find("1 input") != std::string::npos);
  const std::string rank = invalid_argument_message([&] {
    (void)op.output_dims(std::vector<nn::Dims>{{1, 1, 1, 1, 1, 1}});
  });
  CHECK(rank.find("rank 6") != std::string::npos);
}

TEST_CASE("nn add: output_dims validation") {
  nn::Graph g;
  const nn::ValueId a = g.input("a", {2, 3, 4, 4});
  const nn::ValueId b = g.input("b", {2, 3, 4, 5});
  const std::string mismatch = invalid_argument_message([&] { nn::add(g, "res", a, b); });
  CHECK(mismatch.find("add 'res'") != std::string::npos);
  CHECK(mismatch.find("[2, 3, 4, 4]") != std::string::npos);
  CHECK(mismatch.find("[2, 3, 4, 5]") != std::string::npos);
  CHECK(g.nodes().empty());
  nn::add(g, "ok", a, a);
  const std::string one = invalid_argument_message([&] {
    (void)g.nodes().back().op->output_dims(std::vector<nn::Dims>{{2, 3, 4, 4}});
  });
  CHECK(one.find("2 inputs") != std::string::npos);
}

TEST_CASE("nn linear: output_dims validation") {
  nn::Graph g;
  const std::string rank = invalid_argument_message([&] { nn::linear(g, "fc1", g.input("x3", {2, 3, 4}), 10); });
  CHECK(contains(rank, "linear 'fc1'"));
  CHECK(contains(rank, "[2, 3, 4]"));
  CHECK_FALSE(invalid_argument_message([&] { nn::linear(g, "fc2", g.input("x1", {6}), 10); }).empty());
  CHECK(contains(invalid_argument_message([&] { nn::linear(g, "fc3", g.input("x2", {2, 6}), 0); }), "linear 'fc3'"));
  CHECK(g.values_with_role(nn::ValueRole::parameter).empty());

  nn::linear(g, "fc", g.input("x", {2, 8, 2, 2}), 10);
  const nn::Op& op = *g.nodes().back().op;
  CHECK(op.output_dims(std::vector<nn::Dims>{{2, 8, 2, 2}, {10, 8, 2, 2}, {10}}) == std::vector<nn::Dims>{{2, 10}});
  check_rejected(
      [&] {
        (void)op.output_dims(std::vector<nn::Dims>{{2, 4, 2, 2}, {10, 8, 2, 2}, {10}});
      },
      {"linear 'fc'", "[10, 8, 2, 2]", "[2, 4, 2, 2]", "[10, 4, 2, 2]"});
  // A flattened weight does not fit a 4-d source: the weight keeps its spatial dims.
  CHECK_FALSE(invalid_argument_message([&] {
                (void)op.output_dims(std::vector<nn::Dims>{{2, 8, 2, 2}, {10, 32}, {10}});
              }).empty());
  CHECK(contains(invalid_argument_message([&] {
                   (void)op.output_dims(std::vector<nn::Dims>{{2, 8, 2, 2}, {10, 8, 2, 2}, {9}});
                 }),
                 "bias"));
  CHECK(contains(invalid_argument_message([&] {
                   (void)op.output_dims(std::vector<nn::Dims>{{2, 8, 2, 2}});
                 }),
                 "takes 3 inputs"));
}

TEST_CASE("nn max_pool / avg_pool: validation") {
  nn::Graph g;
  const nn::ValueId x = g.input("x", {2, 3, 4, 4});
  const std::string big = invalid_argument_message([&] { nn::max_pool(g, "p1", x, 5, 1); });
  CHECK(big.find("max_pool 'p1'") != std::string::npos);
  CHECK(big.find("larger than the input [2, 3, 4, 4]") != std::string::npos);
  const std::string rank = invalid_argument_message([&] { nn::avg_pool(g, "p2", g.input("v", {2, 3, 4}), 2, 2); });
  CHECK(rank.find("avg_pool 'p2'") != std::string::npos);
  CHECK(rank.find("rank 4") != std::string::npos);
  const std::string pad = invalid_argument_message([&] { nn::max_pool(g, "p3", x, 2, 2, 2); });
  CHECK(pad.find("padding [2, 2]") != std::string::npos);
  CHECK_FALSE(invalid_argument_message([&] { nn::avg_pool(g, "p4", x, 2, 0); }).empty());
  CHECK(g.nodes().empty());
  // With padding, a window as large as the padded input is allowed.
  CHECK(g.value(nn::max_pool(g, "p5", x, 5, 1, 2)).dims == nn::Dims{2, 3, 4, 4});
}

TEST_CASE("nn graph: an unknown value id is a clear error in every builder") {
  nn::Graph g;
  const auto x = g.input("images", {2, 3, 8, 8});
  CHECK_THROWS_AS((void)g.value(99), ca::invalid_argument);
  CHECK_THROWS_AS(nn::conv2d(g, "c", 42, {.out_channels = 4}), ca::invalid_argument);
  CHECK_THROWS_AS(nn::batch_norm(g, "bn", 42), ca::invalid_argument);
  CHECK_THROWS_AS(nn::linear(g, "fc", 42, 10), ca::invalid_argument);
  CHECK_THROWS_AS(nn::relu(g, "r", -1), ca::invalid_argument);
  CHECK(g.value_count() == 1);  // nothing half-added
  CHECK(g.value(x).name == "images");
}

TEST_CASE("nn graph: only a node's output can be recomputed") {
  nn::Graph g;
  const auto x = g.input("images", {2, 3, 8, 8});
  const auto y = nn::relu(g, "r", x);
  check_rejected([&] { g.recompute_in_backward(x); }, {"'images'", "not the output of a node"});
  CHECK_THROWS_AS(g.recompute_in_backward(42), ca::invalid_argument);
  CHECK_FALSE(g.nodes().back().recompute);
  g.recompute_in_backward(y);
  CHECK(g.nodes().back().recompute);
}

// ---- losses ------------------------------------------------------------------

TEST_CASE("nn softmax_cross_entropy: bad labels name the row and the label") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  nn::Graph g;
  nn::softmax_cross_entropy(g, "loss", g.input("logits", {3, 4}), g.label("labels", {3}));
  nn::Op& op = *g.nodes().back().op;
  const std::vector<float> z = test::random_values(12, 55);
  for (const float bad : {4.0f, -1.0f, 1.5f, std::nanf("")}) {
    CAPTURE(bad);
    const std::vector<nn::Tensor> ins{tensor(ctx, nn::plain_desc({3, 4}), z),
                                      tensor(ctx, nn::plain_desc({3}), {0.0f, bad, 2.0f})};
    std::vector<nn::Tensor> outs(1);
    std::vector<nn::Tensor> saved;
    const std::string message = invalid_argument_message([&] { op.forward(ctx, ins, outs, saved); });
    CHECK(message.find("softmax_cross_entropy 'loss'") != std::string::npos);
    CHECK(message.find("row 1") != std::string::npos);
    CHECK(message.find("0 to 3") != std::string::npos);
  }
  // The runtime is intact afterwards: every pin was released.
  const std::vector<nn::Tensor> ins{tensor(ctx, nn::plain_desc({3, 4}), z),
                                    tensor(ctx, nn::plain_desc({3}), {0.0f, 1.0f, 2.0f})};
  std::vector<nn::Tensor> outs(1);
  std::vector<nn::Tensor> saved;
  op.forward(ctx, ins, outs, saved);
  CHECK(std::isfinite(ctx.read(outs[0]).at(0)));
}

// ---- model configurations ----------------------------------------------------

TEST_CASE("nn models: bad configurations throw invalid_argument saying what is valid") {
  SUBCASE("unknown family") {
    const std::string m = model_message(test::imagenet_model("alexnet", 8));
    CHECK(m.find("alexnet") != std::string::npos);
    CHECK(m.find("\"vgg\", \"resnet\", \"densenet\", \"inception\"") != std::string::npos);
  }
  SUBCASE("unknown depth") {
    std::string m = model_message(test::imagenet_model("resnet", 51));
    CHECK(m.find("51") != std::string::npos);
    CHECK(m.find("[18, 34, 50, 101, 152, 200]") != std::string::npos);
    m = model_message(test::imagenet_model("vgg", 12));
    CHECK(m.find("[11, 13, 16, 19, 116, 416]") != std::string::npos);
    m = model_message(test::imagenet_model("densenet", 0));
    CHECK(m.find("[121, 169, 201, 264]") != std::string::npos);
  }
  SUBCASE("image too small for the downsampling") {
    nn::ModelConfig vgg = test::imagenet_model("vgg", 16);
    vgg.image_size = 31;
    std::string m = model_message(vgg);
    CHECK(m.find("at least 32x32") != std::string::npos);
    CHECK(m.find("31x31") != std::string::npos);
    vgg.image_size = 32;
    CHECK(model_message(vgg).empty());

    nn::ModelConfig densenet = test::tiny_model("densenet", 121);
    densenet.image_size = 28;
    m = model_message(densenet);
    CHECK(m.find("at least 29x29") != std::string::npos);
    densenet.image_size = 29;
    CHECK(model_message(densenet).empty());

    nn::ModelConfig resnet = test::tiny_model("resnet", 18);
    resnet.image_size = 0;
    CHECK(model_message(resnet).find("at least 1x1") != std::string::npos);
    resnet.image_size = 1;  // every stride-2 layer pads: a 1x1 image stays 1x1
    CHECK(model_message(resnet).empty());
  }
  SUBCASE("width") {
    for (double width : {0.0, -0.5, std::numeric_limits<double>::quiet_NaN(), 1e9}) {
      CAPTURE(width);
      nn::ModelConfig c = test::tiny_model("resnet", 18);
      c.width = width;
      CHECK(model_message(c).find("width must be greater than 0") != std::string::npos);
    }
    nn::ModelConfig c = test::tiny_model("resnet", 18);
    c.width = 0.001;  // every layer rounds up to one channel
    CHECK(model_message(c).empty());
  }
  SUBCASE("batch, channels, classes") {
    nn::ModelConfig c = test::tiny_model("vgg", 11);
    c.batch = 0;
    CHECK(model_message(c).find("batch size must be at least 1") != std::string::npos);
    c = test::tiny_model("vgg", 11);
    c.channels = -3;
    CHECK(model_message(c).find("channels must be at least 1") != std::string::npos);
    c = test::tiny_model("vgg", 11);
    c.classes = 0;
    CHECK(model_message(c).find("classes must be at least 1") != std::string::npos);
  }
}

// ---- dataset files -----------------------------------------------------------

TEST_CASE("nn data: malformed CIFAR-10 input names the file, what is wrong and what is expected") {
  TempDir dir;
  const auto check = [](const fs::path& path, const std::string& expected) {
    CAPTURE(path);
    const std::string m = invalid_argument_message([&] { (void)nn::cifar10_dataset(path); });
    CHECK_MESSAGE(m.find(path.string()) != std::string::npos, m);
    CHECK_MESSAGE(m.find(expected) != std::string::npos, m);
  };
  check(dir.path() / "missing.bin", "does not exist");
  check(dir.write("empty.bin", {}), "is empty; expected records of 3073 bytes");
  Bytes truncated = cifar_records(0, 2);
  truncated.resize(truncated.size() - 5);
  check(dir.write("truncated.bin", truncated), "6141 bytes, not a whole number of 3073-byte records");
  Bytes bad_label = cifar_records(0, 3);
  bad_label[2 * 3073] = 10;
  check(dir.write("label.bin", bad_label), "record 2 has label 10; CIFAR-10 labels are 0 to 9");
  TempDir empty_dir;
  check(empty_dir.path(), "holds no data_batch_*.bin files");
  // One bad file in a directory: the message names that file.
  TempDir mixed;
  mixed.write("data_batch_1.bin", cifar_records(0, 1));
  const fs::path bad = mixed.write("data_batch_2.bin", truncated);
  const std::string m = invalid_argument_message([&] { (void)nn::cifar10_dataset(mixed.path()); });
  CHECK(m.find(bad.string()) != std::string::npos);
}

TEST_CASE("nn data: malformed MNIST input names the file, what is wrong and what is expected") {
  TempDir dir;
  const fs::path images = dir.write("images", mnist_images(3));
  const fs::path labels = dir.write("labels", mnist_labels({1, 2, 3}));
  const auto check = [](const fs::path& i, const fs::path& l, const fs::path& named, const std::string& expected) {
    const std::string m = invalid_argument_message([&] { (void)nn::mnist_dataset(i, l); });
    CAPTURE(m);
    CHECK(m.find(named.string()) != std::string::npos);
    CHECK(m.find(expected) != std::string::npos);
  };
  check(dir.path() / "nope", labels, dir.path() / "nope", "does not exist");
  check(images, dir.path() / "nope", dir.path() / "nope", "does not exist");
  check(dir.path(), labels, dir.path(), "is not a regular file");

  Bytes wrong_magic = mnist_images(3);
  wrong_magic[3] = 0x02;
  const fs::path wrong = dir.write("wrong-magic", wrong_magic);
  check(wrong, labels, wrong, "has magic number 0x00000802; expected 0x00000803");
  check(labels, images, labels, "looks like the MNIST label file, are the two swapped?");
  check(dir.write("gz", {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}), labels, dir.path() / "gz",
        "gzip-compressed");

  check(dir.write("short-header", {0, 0, 8, 3, 0, 0}), labels, dir.path() / "short-header",
        "truncated: 6 bytes, less than its 16-byte IDX header");
  Bytes truncated = mnist_images(3);
  truncated.resize(truncated.size() - 1);
  check(dir.write("truncated-images", truncated), labels, dir.path() / "truncated-images",
        "announces 3 images of 28x28 pixels (truncated)");
  Bytes trailing = mnist_images(3);
  trailing.push_back(0);
  check(dir.write("trailing-images", trailing), labels, dir.path() / "trailing-images", "(trailing data)");
  check(dir.write("no-images", mnist_images(0)), labels, dir.path() / "no-images", "expected at least one image");

  Bytes short_labels = mnist_labels({1, 2, 3});
  short_labels.pop_back();
  check(images, dir.write("truncated-labels", short_labels), dir.path() / "truncated-labels",
        "announces 3 labels (truncated)");
  check(images, dir.write("label-10", mnist_labels({1, 10, 3})), dir.path() / "label-10",
        "label 1 is 10; MNIST labels are 0 to 9");

  const fs::path four = dir.write("four-labels", mnist_labels({1, 2, 3, 4}));
  const std::string m = invalid_argument_message([&] { (void)nn::mnist_dataset(images, four); });
  CHECK(m.find(images.string()) != std::string::npos);
  CHECK(m.find(four.string()) != std::string::npos);
  CHECK(m.find("holds 3 images but") != std::string::npos);
  CHECK(m.find("holds 4 labels") != std::string::npos);
}
