#pragma once
/// \file
/// \brief A TensorBoard scalar event-file writer: `Event` protobufs encoded by hand and framed as
/// TFRecords, readable by TensorBoard, tensorboardX and `tf.data.TFRecordDataset`.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace gmi::io {

/// \brief CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) of `n` bytes, as TFRecord frames
/// use it; crc32c("123456789") == 0xE3069283.
std::uint32_t crc32c(const void* data, std::size_t n);

/// \brief TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8, so that a CRC stored
/// inside checksummed data does not checksum to a fixed value.
std::uint32_t masked_crc32c(const void* data, std::size_t n);

/// \brief Writes scalars to `dir/events.out.tfevents.<unix seconds>.<host>.<pid>.<n>`
/// (tensorboardX's and PyTorch SummaryWriter's naming; `n` counts the writers this process
/// opened, so two in the same second get different files).  Always a new file, never appended to.
///
/// The first record is the `file_version: "brain.Event:2"` event TensorBoard expects.  Every
/// record is handed to the OS (fflush) when written, so a crash loses nothing already logged.
/// Not thread-safe: one writer per thread (in gmi_drl, rank 0 only).
class TensorBoardWriter {
 public:
  /// Create `dir` (and parents) and the event file.  Throws gmi::InputError naming the path and
  /// the reason when either cannot be created.
  explicit TensorBoardWriter(const std::string& dir);
  /// Closes the file; a failure is logged, never thrown.
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  /// One event holding one value.  `wall_time` is Unix seconds.  The value is stored as float
  /// (TensorBoard's simple_value); NaN and infinities are written as they are.  Throws gmi::Error
  /// naming the file when the write fails (e.g. the disk is full).
  void scalar(const std::string& tag, std::int64_t step, double value, double wall_time);
  /// One event holding every (tag, value) pair, in order.  Nothing is written for an empty list.
  void scalars(std::int64_t step, double wall_time,
               const std::vector<std::pair<std::string, double>>& values);
  /// Flush the C library's buffer to the OS (records already are, when written).
  void flush();

  /// The event file's path.
  const std::string& path() const { return path_; }

 private:
  void write_record(const std::string& data);

  std::FILE* f_ = nullptr;
  std::string path_;
};

}  // namespace gmi::io
