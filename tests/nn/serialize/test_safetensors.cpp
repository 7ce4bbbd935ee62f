// safetensors reading and writing, checked against files the Python
// `safetensors` library wrote (fixtures/make_fixture.py holds the values
// repeated here) and against hand-built headers.
#include "nn/serialize/safetensors.h"

#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "serialize_test_util.h"

namespace anvil::nn::serialize::test {
namespace {

// The tensors of make_fixture.py, listed in an order unlike the file's.
StateDict python_tensors() {
  return {
      {"z.last", raw_tensor<int64_t>({2}, kInt64, {9, 10})},
      {"weight", raw_tensor<float>({2, 3}, kFloat32, {1.5f, -2.25f, 3.0f, 0.125f, -0.0f, 1e-3f})},
      {"mask", raw_tensor<uint8_t>({3}, kBool, {1, 0, 1})},
      {"bias_f64", raw_tensor<double>({3}, kFloat64, {0.1, -1e300, 2.718281828459045})},
      {"half", raw_tensor<uint16_t>({2, 2}, kFloat16, {0x3C00, 0xB800, 0x7BFF, 0x0400})},
      {"bf16", raw_tensor<uint16_t>({4}, kBFloat16, {0x3F80, 0xC020, 0x3E20, 0x7190})},
      {"counts", raw_tensor<int64_t>({4}, kInt64, {0, -1, int64_t(1) << 40, -(int64_t(1) << 62)})},
      {"ids", raw_tensor<int32_t>({2, 2}, kInt32, {7, -8, INT32_MAX, INT32_MIN})},
      {"pixels", raw_tensor<uint8_t>({5}, kUInt8, {0, 1, 127, 128, 255})},
      {"scalar", raw_tensor<float>({}, kFloat32, {42.0f})},
      {"empty", raw_tensor<float>({0, 3}, kFloat32, {})},
      {"a.first", raw_tensor<float>({1}, kFloat32, {-7.0f})},
  };
}

std::map<std::string, Tensor> by_name(const StateDict& sd) {
  std::map<std::string, Tensor> m;
  for (const auto& [name, t] : sd) m[name] = t;
  return m;
}

// 8-byte little-endian length, header, data: a file assembled by hand.
std::string assemble(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string zeros_of(size_t n) { return std::string(n, '\0'); }

class Safetensors : public ScratchDir {};

TEST_F(Safetensors, ReadsEveryValueOfAFileThePythonLibraryWrote) {
  const SafetensorsContents c = load_safetensors_with_metadata(fixture("small.safetensors"));
  EXPECT_EQ(c.metadata, (Metadata{{"format", "pt"}, {"note", "anvil fixture"}}));

  std::vector<std::string> names;
  for (const auto& [name, _] : c.tensors) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"a.first", "bf16", "bias_f64", "counts", "empty", "half", "ids", "mask",
                                             "pixels", "scalar", "weight", "z.last"}));
  auto t = by_name(c.tensors);
  for (const auto& [name, tensor] : t) EXPECT_TRUE(tensor.device().is_cpu()) << name;

  ASSERT_EQ(t["weight"].dtype(), kFloat32);
  EXPECT_EQ(t["weight"].shape(), (Shape{2, 3}));
  EXPECT_EQ(raw_values<float>(t["weight"]), (std::vector<float>{1.5f, -2.25f, 3.0f, 0.125f, -0.0f, 1e-3f}));
  EXPECT_TRUE(std::signbit(raw_values<float>(t["weight"])[4]));

  ASSERT_EQ(t["bias_f64"].dtype(), kFloat64);
  EXPECT_EQ(raw_values<double>(t["bias_f64"]), (std::vector<double>{0.1, -1e300, 2.718281828459045}));

  ASSERT_EQ(t["half"].dtype(), kFloat16);
  EXPECT_EQ(t["half"].shape(), (Shape{2, 2}));
  EXPECT_EQ(raw_values<uint16_t>(t["half"]), (std::vector<uint16_t>{0x3C00, 0xB800, 0x7BFF, 0x0400}));
  EXPECT_EQ(float(t["half"].data<Half>()[2]), 65504.0f);

  ASSERT_EQ(t["bf16"].dtype(), kBFloat16);
  EXPECT_EQ(raw_values<uint16_t>(t["bf16"]), (std::vector<uint16_t>{0x3F80, 0xC020, 0x3E20, 0x7190}));
  EXPECT_EQ(float(t["bf16"].data<BFloat16>()[3]), std::ldexp(1.125f, 100));

  ASSERT_EQ(t["counts"].dtype(), kInt64);
  EXPECT_EQ(raw_values<int64_t>(t["counts"]), (std::vector<int64_t>{0, -1, int64_t(1) << 40, -(int64_t(1) << 62)}));
  ASSERT_EQ(t["ids"].dtype(), kInt32);
  EXPECT_EQ(raw_values<int32_t>(t["ids"]), (std::vector<int32_t>{7, -8, INT32_MAX, INT32_MIN}));
  ASSERT_EQ(t["pixels"].dtype(), kUInt8);
  EXPECT_EQ(raw_values<uint8_t>(t["pixels"]), (std::vector<uint8_t>{0, 1, 127, 128, 255}));
  ASSERT_EQ(t["mask"].dtype(), kBool);
  EXPECT_EQ(raw_values<uint8_t>(t["mask"]), (std::vector<uint8_t>{1, 0, 1}));

  EXPECT_EQ(t["scalar"].dim(), 0);
  EXPECT_EQ(raw_values<float>(t["scalar"]), (std::vector<float>{42.0f}));
  EXPECT_EQ(t["empty"].shape(), (Shape{0, 3}));
  EXPECT_EQ(raw_values<float>(t["a.first"]), (std::vector<float>{-7.0f}));
  EXPECT_EQ(raw_values<int64_t>(t["z.last"]), (std::vector<int64_t>{9, 10}));
}

TEST_F(Safetensors, WritesTheSameBytesAsThePythonLibrary) {
  const std::string expected = read_bytes(fixture("roundtrip_expected.safetensors"));
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(serialize_safetensors(python_tensors(), {{"format", "pt"}}), expected);

  save_safetensors(path("ours.safetensors"), python_tensors(), {{"format", "pt"}});
  EXPECT_EQ(read_bytes(path("ours.safetensors")), expected);
  EXPECT_EQ(listing(), (std::vector<std::string>{"ours.safetensors"}));  // no temporary left
}

TEST_F(Safetensors, EmptyStateDictMatchesPython) {
  // bytes(safetensors.numpy.save({}))
  EXPECT_EQ(serialize_safetensors({}), std::string("\x08\0\0\0\0\0\0\0{}      ", 16));
  EXPECT_TRUE(deserialize_safetensors(serialize_safetensors({})).tensors.empty());
}

TEST_F(Safetensors, HeaderIsPaddedWithSpacesToAMultipleOfEight) {
  for (int len = 1; len <= 9; ++len) {
    const std::string bytes = serialize_safetensors({{std::string(len, 'x'), randn({2})}});
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    EXPECT_EQ(n % 8, 0u);
    EXPECT_EQ(bytes.size(), 8 + n + 8);
    const std::string header = bytes.substr(8, n);
    const size_t close = header.rfind('}');
    EXPECT_EQ(header.find_first_not_of(' ', close + 1), std::string::npos) << header;
    EXPECT_LT(n - (close + 1), 8u);
  }
}

TEST_F(Safetensors, RoundTripsRandomTensorsOfEveryDtypeIncludingViews) {
  manual_seed(7);
  Tensor base = randn({4, 5});
  StateDict sd = {
      {"f32", randn({3, 4})},
      {"f64", randn({2, 2, 3}, kFloat64)},
      {"f16", randn({5}).to(kFloat16)},
      {"bf16", randn({2, 3}).to(kBFloat16)},
      {"i64", randint(-1000000, 1000000, {7})},
      {"i32", randint(-1000, 1000, {3, 3}, kInt32)},
      {"u8", randint(0, 256, {6}, kUInt8)},
      {"bool", randint(0, 2, {4}, kUInt8).to(kBool)},
      {"transposed", base.t()},  // non-contiguous
      {"sliced", base.slice(0, 1, 3).slice(1, 1, 4)},  // offset and gaps
      {"param", randn({3}).requires_grad_(true)},
  };
  save_safetensors(path("rt.safetensors"), sd);
  auto loaded = by_name(load_safetensors(path("rt.safetensors")));
  ASSERT_EQ(loaded.size(), sd.size());
  for (const auto& [name, original] : sd) {
    const Tensor& back = loaded.at(name);
    EXPECT_EQ(back.dtype(), original.dtype()) << name;
    EXPECT_EQ(back.shape(), original.shape()) << name;
    EXPECT_TRUE(back.is_contiguous()) << name;
    EXPECT_FALSE(back.requires_grad()) << name;
    EXPECT_EQ(logical_bytes(back), logical_bytes(original)) << name;
  }
}

TEST_F(Safetensors, ReadsTensorsInAnyOrderAndAlignment) {
  // Data order b (F64, at byte 4: unaligned), then a (F32); header lists
  // metadata in the middle; header length not a multiple of 8.
  const double b = -3.25;
  const float a = 6.5f;
  std::string data(12, '\0');
  std::memcpy(data.data() + 4, &b, 8);
  std::memcpy(data.data(), &a, 4);
  const std::string header = R"({"b":{"dtype":"F64","shape":[],"data_offsets":[4,12]},"__metadata__":{"k":"v"},)"
                             R"("a":{"dtype":"F32","shape":[1,1],"data_offsets":[0,4]}} )";
  const SafetensorsContents c = deserialize_safetensors(assemble(header, data));
  ASSERT_EQ(c.tensors.size(), 2u);
  EXPECT_EQ(c.tensors[0].first, "a");
  EXPECT_EQ(c.tensors[0].second.shape(), (Shape{1, 1}));
  EXPECT_EQ(raw_values<float>(c.tensors[0].second), (std::vector<float>{a}));
  EXPECT_EQ(c.tensors[1].first, "b");
  EXPECT_EQ(raw_values<double>(c.tensors[1].second), (std::vector<double>{b}));
  EXPECT_EQ(c.metadata, (Metadata{{"k", "v"}}));
}

TEST_F(Safetensors, ReplacesAnExistingFile) {
  save_safetensors(path("m.safetensors"), {{"w", randn({100})}});
  const Tensor second = randn({2});
  save_safetensors(path("m.safetensors"), {{"v", second}});
  const StateDict back = load_safetensors(path("m.safetensors"));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].first, "v");
  EXPECT_EQ(logical_bytes(back[0].second), logical_bytes(second));
  EXPECT_EQ(listing(), (std::vector<std::string>{"m.safetensors"}));
}

// --- errors: each names the file and what is wrong ---

TEST_F(Safetensors, MissingFile) {
  const auto p = path("nope.safetensors");
  const std::string msg = error_of([&] { load_safetensors(p); });
  EXPECT_NE(msg.find(p.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("no such file"), std::string::npos) << msg;
}

TEST_F(Safetensors, FileShorterThanTheLengthPrefix) {
  write_bytes(path("short"), "abc");
  const std::string msg = error_of([&] { load_safetensors(path("short")); });
  EXPECT_NE(msg.find(path("short").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
}

TEST_F(Safetensors, HeaderLengthLargerThanTheFile) {
  std::string bytes = assemble("{}      ", "");
  bytes[0] = 100;
  write_bytes(path("long"), bytes);
  const std::string msg = error_of([&] { load_safetensors(path("long")); });
  EXPECT_NE(msg.find(path("long").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("header length says 100 bytes but only 8 follow"), std::string::npos) << msg;
}

TEST_F(Safetensors, TruncatedData) {
  std::string bytes = read_bytes(fixture("small.safetensors"));
  bytes.resize(bytes.size() - 2);
  write_bytes(path("cut"), bytes);
  const std::string msg = error_of([&] { load_safetensors(path("cut")); });
  EXPECT_NE(msg.find(path("cut").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("reach past the end of the data"), std::string::npos) << msg;
}

TEST_F(Safetensors, BadJson) {
  write_bytes(path("bad"), assemble(R"({"a": {"dtype": "F32",)", ""));
  const std::string msg = error_of([&] { load_safetensors(path("bad")); });
  EXPECT_NE(msg.find(path("bad").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("not valid JSON"), std::string::npos) << msg;
  EXPECT_NE(error_of([] { deserialize_safetensors(assemble("[1, 2]", "")); }).find("must be a JSON object"),
            std::string::npos);
}

TEST_F(Safetensors, UnknownDtype) {
  const std::string msg = error_of([] {
    deserialize_safetensors(assemble(R"({"x":{"dtype":"I8","shape":[2],"data_offsets":[0,2]}})", zeros_of(2)));
  });
  EXPECT_NE(msg.find("tensor 'x': unsupported dtype 'I8'"), std::string::npos) << msg;
}

TEST_F(Safetensors, OffsetsOutOfRange) {
  const std::string msg = error_of([] {
    deserialize_safetensors(assemble(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", zeros_of(4)));
  });
  EXPECT_NE(msg.find("tensor 'x': data_offsets [0, 8] reach past the end of the data (4 bytes"), std::string::npos)
      << msg;
  const std::string backwards = error_of([] {
    deserialize_safetensors(assemble(R"({"x":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}})", zeros_of(4)));
  });
  EXPECT_NE(backwards.find("end before they begin"), std::string::npos) << backwards;
}

TEST_F(Safetensors, OverlappingTensors) {
  const std::string msg = error_of([] {
    deserialize_safetensors(assemble(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                     R"("y":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                     zeros_of(12)));
  });
  EXPECT_NE(msg.find("tensors 'x' [0, 8] and 'y' [4, 12] overlap"), std::string::npos) << msg;
}

TEST_F(Safetensors, HolesAndTrailingBytes) {
  const std::string hole = error_of([] {
    deserialize_safetensors(assemble(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", zeros_of(8)));
  });
  EXPECT_NE(hole.find("data bytes [0, 4) belong to no tensor"), std::string::npos) << hole;
  const std::string trailing = error_of([] {
    deserialize_safetensors(assemble(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", zeros_of(8)));
  });
  EXPECT_NE(trailing.find("has 8 bytes but the tensors cover only 4"), std::string::npos) << trailing;
}

TEST_F(Safetensors, ShapeDisagreesWithOffsets) {
  const std::string msg = error_of([] {
    deserialize_safetensors(assemble(R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})", zeros_of(20)));
  });
  EXPECT_NE(msg.find("tensor 'w': shape [2, 3] of F32 needs 24 bytes but data_offsets [0, 20] span 20"),
            std::string::npos)
      << msg;
}

TEST_F(Safetensors, MalformedEntries) {
  auto msg_for = [](const std::string& header, size_t data) {
    return error_of([&] { deserialize_safetensors(assemble(header, zeros_of(data))); });
  };
  EXPECT_NE(msg_for(R"({"x":{"shape":[1],"data_offsets":[0,4]}})", 4).find("tensor 'x': missing \"dtype\""),
            std::string::npos);
  EXPECT_NE(msg_for(R"({"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4).find("non-negative integers"),
            std::string::npos);
  EXPECT_NE(msg_for(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4).find("two non-negative"),
            std::string::npos);
  EXPECT_NE(msg_for(R"({"x":[1]})", 0).find("expected an object"), std::string::npos);
  EXPECT_NE(msg_for(R"({"__metadata__":{"k":1}})", 0).find("metadata 'k' must be a string"), std::string::npos);
  EXPECT_NE(msg_for(R"({"x":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})", 0).find("reach past"),
            std::string::npos);
  // A BOOL byte other than 0 or 1 cannot be a C++ bool.
  const std::string bools = error_of([] {
    deserialize_safetensors(assemble(R"({"m":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})", "\x01\x02"));
  });
  EXPECT_NE(bools.find("BOOL tensor 'm' holds byte 2 at element 1"), std::string::npos) << bools;
}

TEST_F(Safetensors, RejectsStateDictsTheFormatCannotHold) {
  EXPECT_NE(error_of([] {
              serialize_safetensors({{"a", randn({1})}, {"a", randn({1})}});
            }).find("'a' appears twice"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              serialize_safetensors({{"a", Tensor()}});
            }).find("tensor 'a' is undefined"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              serialize_safetensors({{"__metadata__", randn({1})}});
            }).find("reserved"),
            std::string::npos);
  EXPECT_NE(error_of([] { serialize_safetensors({{"", randn({1})}}); }).find("empty name"), std::string::npos);
  EXPECT_NE(error_of([] {
              serialize_safetensors({{"bad\xff", randn({1})}});
            }).find("not valid UTF-8"),
            std::string::npos);
  // A failed save leaves nothing behind.
  const auto p = path("x.safetensors");
  EXPECT_NE(error_of([&] { save_safetensors(p, {{"a", Tensor()}}); }).find(p.string()), std::string::npos);
  EXPECT_TRUE(listing().empty());
}

}  // namespace
}  // namespace anvil::nn::serialize::test
