#include "elementwise_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

ir::Node shift_node(const char* dir) {
  return make_node("BitShift", 2, 1, {{"direction", ir::Attribute::make_string(dir)}}, 11);
}

TEST(BitShift, LeftAndRightUint8) {
  auto out = run_ok(shift_node("LEFT"), {u8({4}, {16, 4, 1, 255}), u8({4}, {1, 2, 3, 1})});
  EXPECT_EQ(values_as<uint8_t>(out[0]), (std::vector<uint8_t>{32, 16, 8, 254}));  // 255 << 1 keeps 8 bits
  out = run_ok(shift_node("RIGHT"), {u8({4}, {16, 4, 1, 255}), u8({4}, {1, 2, 3, 7})});
  EXPECT_EQ(values_as<uint8_t>(out[0]), (std::vector<uint8_t>{8, 1, 0, 1}));
}

TEST(BitShift, ShiftsOfTheWidthOrMoreGiveZero) {
  auto out = run_ok(shift_node("LEFT"), {u8({3}, {1, 1, 128}), u8({3}, {8, 200, 7})});
  EXPECT_EQ(values_as<uint8_t>(out[0]), (std::vector<uint8_t>{0, 0, 0}));
  out = run_ok(shift_node("RIGHT"), {u8({2}, {255, 255}), u8({2}, {8, 255})});
  EXPECT_EQ(values_as<uint8_t>(out[0]), (std::vector<uint8_t>{0, 0}));
}

TEST(BitShift, Broadcasts) {
  auto out = run_ok(shift_node("LEFT"), {u8({2, 1}, {1, 3}), u8({3}, {0, 1, 2})});
  EXPECT_EQ(out[0].dims(), (Dims{2, 3}));
  EXPECT_EQ(values_as<uint8_t>(out[0]), (std::vector<uint8_t>{1, 2, 4, 3, 6, 12}));
}

TEST(BitShift, WiderUnsignedTypes) {
  auto node = shift_node("LEFT");
  auto t16 = Tensor::from_vector(DataType::kUInt16, {3}, std::vector<uint16_t>{1, 0x8001, 3});
  auto s16 = Tensor::from_vector(DataType::kUInt16, {3}, std::vector<uint16_t>{15, 1, 16});
  EXPECT_EQ(values_as<uint16_t>(run_ok(node, {t16, s16})[0]), (std::vector<uint16_t>{0x8000, 2, 0}));
  auto t64 = Tensor::from_vector(DataType::kUInt64, {2}, std::vector<uint64_t>{1, 1});
  auto s64 = Tensor::from_vector(DataType::kUInt64, {2}, std::vector<uint64_t>{63, 64});
  EXPECT_EQ(values_as<uint64_t>(run_ok(node, {t64, s64})[0]), (std::vector<uint64_t>{uint64_t{1} << 63, 0}));
  auto t32 = Tensor::from_vector(DataType::kUInt32, {1}, std::vector<uint32_t>{0x80000000u});
  auto s32 = Tensor::from_vector(DataType::kUInt32, {1}, std::vector<uint32_t>{31});
  EXPECT_EQ(values_as<uint32_t>(run_ok(shift_node("RIGHT"), {t32, s32})[0]), (std::vector<uint32_t>{1}));
}

TEST(BitShift, RejectsOtherTypesAndDirections) {
  EXPECT_EQ(run_status(shift_node("LEFT"), {i32({1}, {1}), i32({1}, {1})}).code(), StatusCode::kUnsupported);
  EXPECT_EQ(run_status(shift_node("UP"), {u8({1}, {1}), u8({1}, {1})}).code(), StatusCode::kInvalidModel);
  EXPECT_FALSE(run_status(make_node("BitShift", 2, 1, {}, 11), {u8({1}, {1}), u8({1}, {1})}).ok());
}

}  // namespace
}  // namespace streamrt
