#pragma once
/// \file
/// \brief A thin RAII layer over the HDF5 C API: every call checked, every handle closed.
/// Files are written serially (create_file) or collectively with the MPI-IO driver
/// (create_file_parallel: parallel HDF5, each rank writing its rows of a global dataset), and
/// read serially.  Datasets written with write_rows are chunked and carry the Fletcher32
/// checksum filter, so a damaged chunk fails to read instead of returning wrong numbers.
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "mpi/comm.hpp"

namespace gmi::io {

/// Owns one HDF5 identifier and closes it with the matching H5?close.
class H5Handle {
 public:
  H5Handle() = default;
  explicit H5Handle(hid_t id) : id_(id) {}
  ~H5Handle();
  H5Handle(H5Handle&& o) noexcept : id_(o.id_) { o.id_ = H5I_INVALID_HID; }
  H5Handle& operator=(H5Handle&& o) noexcept;
  H5Handle(const H5Handle&) = delete;
  H5Handle& operator=(const H5Handle&) = delete;
  hid_t get() const { return id_; }
  operator hid_t() const { return id_; }

 private:
  hid_t id_ = H5I_INVALID_HID;
};

/// How many files HDF5 still holds open in this process.  After a failed write (its flush to a full
/// disk) HDF5 can keep the file open past its handle's close, and its clean-up of that file at
/// MPI_Finalize then crashed (HDF5 1.10, parallel): a process that failed with a file still open
/// must not finalize.
long open_files();

/// The HDF5 type of a C++ element type (float, double, int32, int64, uint64, uint8).
template <class T>
hid_t native_type();

/// Create (truncate) a file for writing.
H5Handle create_file(const std::string& path);
/// Create (truncate) a file collectively over `comm` with the MPI-IO driver.
H5Handle create_file_parallel(const std::string& path, MPI_Comm comm);
/// Open an existing file read-only (serial).  Throws gmi::InputError naming the file when it is
/// missing, a directory, or not HDF5.
H5Handle open_file(const std::string& path);

H5Handle create_group(hid_t loc, const std::string& name);
/// Open a group; throws gmi::Error when it does not exist.
H5Handle open_group(hid_t loc, const std::string& name);
/// Whether `path` (relative to `loc`, e.g. "policy/params") names an existing object.
bool exists(hid_t loc, const std::string& path);

/// Write a contiguous dataset of the given shape (row-major) under `loc`.
void write(hid_t loc, const std::string& name, const float* data, const std::vector<hsize_t>& dims);
void write(hid_t loc, const std::string& name, const double* data, const std::vector<hsize_t>& dims);
void write(hid_t loc, const std::string& name, const std::uint8_t* data, const std::vector<hsize_t>& dims);
void write(hid_t loc, const std::string& name, const std::int64_t* data, const std::vector<hsize_t>& dims);

/// \brief Collective write of a chunked, Fletcher32-checked dataset of shape `dims` (row-major;
/// dims[0] rows).  Every rank of the file's communicator calls it; this rank writes rows
/// [row0, row0 + rows) from `data` (rows may be 0).  Chunks are `chunk_rows` rows, so ranks
/// writing whole chunks never share one.
template <class T>
void write_rows(hid_t loc, const std::string& name, const T* data, const std::vector<hsize_t>& dims,
                hsize_t row0, hsize_t rows, hsize_t chunk_rows);

/// Shape of a dataset, and whether its element type is exactly T.
struct DatasetInfo {
  std::vector<hsize_t> dims;
  std::string type;  ///< e.g. "float32", "uint64", "string"
  hsize_t chunk_rows = 0;  ///< rows per chunk (0: not chunked)
  std::size_t elements() const;
};
DatasetInfo dataset_info(hid_t loc, const std::string& name);
template <class T>
std::string type_name();

/// Read rows [row0, row0 + rows) of a dataset (rows = -1: to the end) whose element type must
/// be T.  Throws gmi::Error on a type mismatch or a failed read (e.g. a checksum).
template <class T>
std::vector<T> read_rows(hid_t loc, const std::string& name, hsize_t row0 = 0, hssize_t rows = -1);

void write_attribute(hid_t loc, const std::string& name, const std::string& value);
void write_attribute(hid_t loc, const std::string& name, std::int64_t value);
void write_attribute(hid_t loc, const std::string& name, double value);
std::string read_string_attribute(hid_t loc, const std::string& name);
std::int64_t read_int_attribute(hid_t loc, const std::string& name);
double read_double_attribute(hid_t loc, const std::string& name);

/// Every dataset below `loc`, as paths relative to it, in name order.
std::vector<std::string> list_datasets(hid_t loc);

}  // namespace gmi::io
