#include "src/io/tensorboard.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "kernels/core/error.hpp"

// The format, from TensorFlow's core/util/event.proto, core/framework/summary.proto and
// core/lib/io/record_writer.cc.  Debian 12 packages no C/C++ CRC-32C library, and the protobuf
// subset plus the TFRecord framing is about 100 lines, so both are written here rather than
// pulling in libprotobuf-generated code and a CRC dependency for a log file.

namespace gmi::io {

namespace {

/// Byte-at-a-time table for the reflected Castagnoli polynomial.
const std::array<std::uint32_t, 256>& crc_table() {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  return table;
}

// Protobuf wire format: a key is (field << 3) | wire type; integers are little-endian whatever
// the host's byte order.
enum Wire : unsigned { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

void put_le(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
}

void put_key(std::string& out, unsigned field, Wire wire) { put_varint(out, (field << 3) | wire); }

void put_bytes(std::string& out, unsigned field, const std::string& bytes) {
  put_key(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  out += bytes;
}

void put_double(std::string& out, unsigned field, double v) {
  std::uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  put_key(out, field, kFixed64);
  put_le(out, bits, 8);
}

void put_float(std::string& out, unsigned field, float v) {
  std::uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  put_key(out, field, kFixed32);
  put_le(out, bits, 4);
}

/// Summary { repeated Value value = 1 }, Value { string tag = 1; float simple_value = 2 }.
/// simple_value sits in a oneof, so it is written even when 0 (its presence is what TensorBoard
/// checks).
std::string summary(const std::vector<std::pair<std::string, double>>& values) {
  std::string s;
  for (const auto& [tag, v] : values) {
    std::string value;
    put_bytes(value, 1, tag);
    put_float(value, 2, static_cast<float>(v));
    put_bytes(s, 1, value);
  }
  return s;
}

/// Event { double wall_time = 1; int64 step = 2; Summary summary = 5 }.
std::string summary_event(double wall_time, std::int64_t step, const std::string& summary) {
  std::string e;
  put_double(e, 1, wall_time);
  put_key(e, 2, kVarint);
  put_varint(e, static_cast<std::uint64_t>(step));  // negative int64: ten bytes, as protobuf does
  put_bytes(e, 5, summary);
  return e;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string hostname() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') return "localhost";
  return host;
}

}  // namespace

std::uint32_t crc32c(const void* data, std::size_t n) {
  const auto& table = crc_table();
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xFFu] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::uint32_t masked_crc32c(const void* data, std::size_t n) {
  const std::uint32_t c = crc32c(data, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

TensorBoardWriter::TensorBoardWriter(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw InputError("TensorBoard directory " + dir + ": cannot create (" +
                     (ec ? ec.message() : std::string("exists and is not a directory")) + ")");

  static std::atomic<int> opened{0};
  const double t = now_seconds();
  path_ = (std::filesystem::path(dir) /
           ("events.out.tfevents." + std::to_string(static_cast<long long>(t)) + "." + hostname() +
            "." + std::to_string(getpid()) + "." + std::to_string(opened++)))
              .string();
  // "x": fail rather than truncate or append to a file that is already there.
  f_ = std::fopen(path_.c_str(), "wbx");
  if (!f_) throw InputError(path_ + ": cannot create TensorBoard event file (" + std::strerror(errno) + ")");

  std::string version;
  put_double(version, 1, t);
  put_bytes(version, 3, "brain.Event:2");  // Event { string file_version = 3 }
  try {
    write_record(version);
  } catch (...) {
    std::fclose(f_);
    f_ = nullptr;
    throw;
  }
}

TensorBoardWriter::~TensorBoardWriter() {
  if (f_ && std::fclose(f_) != 0)
    spdlog::warn("{}: closing the TensorBoard event file failed ({})", path_, std::strerror(errno));
}

void TensorBoardWriter::scalar(const std::string& tag, std::int64_t step, double value, double wall_time) {
  write_record(summary_event(wall_time, step, summary({{tag, value}})));
}

void TensorBoardWriter::scalars(std::int64_t step, double wall_time,
                                const std::vector<std::pair<std::string, double>>& values) {
  if (values.empty()) return;
  write_record(summary_event(wall_time, step, summary(values)));
}

void TensorBoardWriter::flush() {
  if (std::fflush(f_) != 0)
    throw Error(path_ + ": cannot write TensorBoard event file (" + std::strerror(errno) + ")");
}

/// TFRecord: uint64 length, masked CRC of those 8 bytes, the data, masked CRC of the data.
/// Built in one buffer so each record reaches the OS in one write.
void TensorBoardWriter::write_record(const std::string& data) {
  std::string rec;
  rec.reserve(data.size() + 16);
  put_le(rec, data.size(), 8);
  put_le(rec, masked_crc32c(rec.data(), 8), 4);
  rec += data;
  put_le(rec, masked_crc32c(data.data(), data.size()), 4);
  if (std::fwrite(rec.data(), 1, rec.size(), f_) != rec.size() || std::fflush(f_) != 0)
    throw Error(path_ + ": cannot write TensorBoard event file (" + std::strerror(errno) + ")");
}

}  // namespace gmi::io
