#pragma once
/// \file
/// \brief A thin RAII layer over the HDF5 C API: every call checked, every handle closed.
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

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

/// Create (truncate) a file for writing.
H5Handle create_file(const std::string& path);

/// Write a dataset of the given shape (row-major) under `loc`.
void write(hid_t loc, const std::string& name, const float* data, const std::vector<hsize_t>& dims);
void write(hid_t loc, const std::string& name, const double* data, const std::vector<hsize_t>& dims);
void write(hid_t loc, const std::string& name, const std::uint8_t* data, const std::vector<hsize_t>& dims);
void write(hid_t loc, const std::string& name, const std::int64_t* data, const std::vector<hsize_t>& dims);
void write_attribute(hid_t loc, const std::string& name, const std::string& value);

}  // namespace gmi::io
