// The TensorBoard event writer against oracles of its own: CRC-32C's published check values and a
// bit-at-a-time CRC, a TFRecord reader and protobuf decoder written here from the format's
// description, and hand-assembled bytes for one scalar event.  check_tensorboard.py reads the
// writer's files with TensorBoard's own reader.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "kernels/core/error.hpp"
#include "src/io/tensorboard.hpp"

namespace fs = std::filesystem;
using gmi::io::TensorBoardWriter;

namespace {

// Bit at a time, straight from the definition (no table): the reference for the writer's table.
std::uint32_t crc32c_bitwise(const std::string& s) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : s) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
  }
  return ~c;
}

std::uint32_t mask(std::uint32_t c) { return ((c >> 15) | (c << 17)) + 0xa282ead8u; }

std::uint64_t le(const std::string& s, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= std::uint64_t(static_cast<unsigned char>(s[at + i])) << (8 * i);
  return v;
}

// TFRecord frames of a file; every length and CRC must check out and the file end on a frame.
std::vector<std::string> read_records(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string f((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < f.size()) {
    EXPECT_LE(at + 12, f.size()) << "truncated header";
    if (at + 12 > f.size()) break;
    const std::uint64_t n = le(f, at, 8);
    EXPECT_EQ(le(f, at + 8, 4), mask(crc32c_bitwise(f.substr(at, 8)))) << "length CRC at " << at;
    EXPECT_LE(at + 12 + n + 4, f.size()) << "truncated record";
    if (at + 12 + n + 4 > f.size()) break;
    const std::string data = f.substr(at + 12, n);
    EXPECT_EQ(le(f, at + 12 + n, 4), mask(crc32c_bitwise(data))) << "data CRC at " << at;
    out.push_back(data);
    at += 12 + n + 4;
  }
  return out;
}

// One decoded protobuf field: varints and fixed-width values in `num`, length-delimited in `bytes`.
struct Field {
  unsigned number, wire;
  std::uint64_t num = 0;
  std::string bytes;
};

std::uint64_t varint(const std::string& s, std::size_t& at) {
  std::uint64_t v = 0;
  for (int shift = 0; at < s.size(); shift += 7) {
    const auto b = static_cast<unsigned char>(s[at++]);
    v |= std::uint64_t(b & 0x7F) << shift;
    if (!(b & 0x80)) return v;
  }
  ADD_FAILURE() << "truncated varint";
  return v;
}

std::vector<Field> decode(const std::string& s) {
  std::vector<Field> out;
  std::size_t at = 0;
  while (at < s.size()) {
    const std::uint64_t key = varint(s, at);
    Field f{unsigned(key >> 3), unsigned(key & 7), 0, {}};
    if (f.wire == 0) {
      f.num = varint(s, at);
    } else if (f.wire == 1 || f.wire == 5) {
      const int n = f.wire == 1 ? 8 : 4;
      f.num = le(s, at, n);
      at += n;
    } else if (f.wire == 2) {
      const std::uint64_t n = varint(s, at);
      f.bytes = s.substr(at, n);
      at += n;
    } else {
      ADD_FAILURE() << "unexpected wire type " << f.wire;
      break;
    }
    out.push_back(f);
  }
  EXPECT_EQ(at, s.size()) << "field overruns its message";
  return out;
}

double as_double(std::uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}

float as_float(std::uint64_t bits) {
  const auto b = static_cast<std::uint32_t>(bits);
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

class TensorBoard : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gmi_tb_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

}  // namespace

TEST(Crc32c, PublishedCheckValues) {
  EXPECT_EQ(gmi::io::crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(gmi::io::crc32c("", 0), 0u);
  // RFC 3720 (iSCSI), appendix B.4.
  const std::string zeros(32, '\0'), ones(32, '\xFF');
  std::string ascending;
  for (int i = 0; i < 32; ++i) ascending += static_cast<char>(i);
  EXPECT_EQ(gmi::io::crc32c(zeros.data(), 32), 0x8A9136AAu);
  EXPECT_EQ(gmi::io::crc32c(ones.data(), 32), 0x62A8AB43u);
  EXPECT_EQ(gmi::io::crc32c(ascending.data(), 32), 0x46DD794Eu);
}

TEST(Crc32c, TableAgreesWithBitwise) {
  std::mt19937 rng(7);
  for (std::size_t n : {1, 2, 7, 8, 63, 64, 1000}) {
    std::string s(n, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    EXPECT_EQ(gmi::io::crc32c(s.data(), n), crc32c_bitwise(s)) << n << " bytes";
    EXPECT_EQ(gmi::io::masked_crc32c(s.data(), n), mask(crc32c_bitwise(s))) << n << " bytes";
  }
}

TEST_F(TensorBoard, FirstRecordIsFileVersion) {
  const double before = std::floor(
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  TensorBoardWriter w(dir_.string());
  const double after =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();

  const std::string name = fs::path(w.path()).filename().string();
  EXPECT_EQ(fs::path(w.path()).parent_path(), dir_);
  EXPECT_TRUE(std::regex_match(name, std::regex(R"(events\.out\.tfevents\.\d{10}\.[^.].*\.)" +
                                                std::to_string(::getpid()) + R"(\.\d+)")))
      << name;

  // Read while the writer is still open: the record must already have reached the OS.
  const auto records = read_records(w.path());
  ASSERT_EQ(records.size(), 1u);
  const auto fields = decode(records[0]);
  ASSERT_EQ(fields.size(), 2u);
  EXPECT_EQ(fields[0].number, 1u);  // wall_time, double
  EXPECT_EQ(fields[0].wire, 1u);
  EXPECT_GE(as_double(fields[0].num), before);
  EXPECT_LE(as_double(fields[0].num), after);
  EXPECT_EQ(fields[1].number, 3u);  // file_version, string
  EXPECT_EQ(fields[1].wire, 2u);
  EXPECT_EQ(fields[1].bytes, "brain.Event:2");
}

TEST_F(TensorBoard, ScalarBytes) {
  TensorBoardWriter w(dir_.string());
  w.scalar("loss", 7, 0.5, 1234.5);
  const auto records = read_records(w.path());
  ASSERT_EQ(records.size(), 2u);
  // Assembled by hand: 1234.5 = 0x40934A0000000000, 0.5f = 0x3F000000.
  const unsigned char want[] = {
      0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x4A, 0x93, 0x40,  // wall_time
      0x10, 0x07,                                            // step
      0x2A, 0x0D,                                            // summary, 13 bytes
      0x0A, 0x0B,                                            //   value, 11 bytes
      0x0A, 0x04, 'l', 'o', 's', 's',                        //     tag
      0x15, 0x00, 0x00, 0x00, 0x3F};                         //     simple_value
  EXPECT_EQ(records[1], std::string(reinterpret_cast<const char*>(want), sizeof(want)));
}

TEST_F(TensorBoard, StepsZeroNegativeAndLarge) {
  TensorBoardWriter w(dir_.string());
  w.scalar("a", 0, 0.0, 1.0);
  w.scalar("a", -1, 1.0, 2.0);
  w.scalar("a", std::int64_t(1) << 40, 2.0, 3.0);
  const auto records = read_records(w.path());
  ASSERT_EQ(records.size(), 4u);
  const std::int64_t steps[] = {0, -1, std::int64_t(1) << 40};
  for (int i = 0; i < 3; ++i) {
    const auto e = decode(records[1 + i]);
    ASSERT_EQ(e.size(), 3u);
    EXPECT_EQ(as_double(e[0].num), 1.0 + i);
    EXPECT_EQ(e[1].number, 2u);
    EXPECT_EQ(static_cast<std::int64_t>(e[1].num), steps[i]);
    // simple_value is in a oneof: 0.0 must still be present.
    const auto value = decode(decode(e[2].bytes).at(0).bytes);
    ASSERT_EQ(value.size(), 2u);
    EXPECT_EQ(as_float(value[1].num), float(i));
  }
}

TEST_F(TensorBoard, ScalarsShareOneEvent) {
  TensorBoardWriter w(dir_.string());
  const double nan = std::nan("");
  w.scalars(3, 10.25, {{"x", 1.5}, {"loss/policy", -2.0}, {"bad", nan}});
  w.scalars(4, 11.0, {});  // nothing
  const auto records = read_records(w.path());
  ASSERT_EQ(records.size(), 2u);
  const auto e = decode(records[1]);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(as_double(e[0].num), 10.25);
  EXPECT_EQ(e[1].num, 3u);
  EXPECT_EQ(e[2].number, 5u);
  const auto values = decode(e[2].bytes);
  ASSERT_EQ(values.size(), 3u);
  const char* tags[] = {"x", "loss/policy", "bad"};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(values[i].number, 1u);
    const auto v = decode(values[i].bytes);
    ASSERT_EQ(v.size(), 2u);
    EXPECT_EQ(v[0].bytes, tags[i]);
    EXPECT_EQ(v[1].number, 2u);
    EXPECT_EQ(v[1].wire, 5u);
  }
  EXPECT_EQ(as_float(decode(values[0].bytes)[1].num), 1.5f);
  EXPECT_EQ(as_float(decode(values[1].bytes)[1].num), -2.0f);
  EXPECT_TRUE(std::isnan(as_float(decode(values[2].bytes)[1].num)));
}

TEST_F(TensorBoard, EachWriterGetsItsOwnFile) {
  TensorBoardWriter a(dir_.string());
  TensorBoardWriter b(dir_.string());
  EXPECT_NE(a.path(), b.path());
  a.scalar("t", 1, 1.0, 1.0);
  a.flush();
  EXPECT_EQ(read_records(a.path()).size(), 2u);
  EXPECT_EQ(read_records(b.path()).size(), 1u);
}

TEST_F(TensorBoard, UncreatableDirectoryNamesThePath) {
  fs::create_directories(dir_);
  const std::string file = (dir_ / "plain_file").string();
  std::ofstream(file) << "x";
  for (const std::string& bad : {file, file + "/sub"}) {
    try {
      TensorBoardWriter w(bad);
      ADD_FAILURE() << "no error for " << bad;
    } catch (const gmi::InputError& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}
