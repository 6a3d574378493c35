#include "src/io/h5.hpp"

#include <spdlog/spdlog.h>

#include "kernels/core/error.hpp"

namespace gmi {
namespace detail {
namespace {
herr_t take_top(unsigned n, const H5E_error2_t* e, void* out) {
  if (n == 0) {
    auto* s = static_cast<std::string*>(out);
    *s = std::string(e->func_name ? e->func_name : "?") + ": " + (e->desc ? e->desc : "?");
  }
  return 0;
}
}  // namespace

std::string h5_error_string() {
  std::string s = "see the HDF5 error stack";
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, take_top, &s);
  return s;
}
}  // namespace detail

namespace io {

H5Handle::~H5Handle() {
  if (id_ < 0) return;
  herr_t r = 0;
  switch (H5Iget_type(id_)) {
    case H5I_FILE: r = H5Fclose(id_); break;
    case H5I_GROUP: r = H5Gclose(id_); break;
    case H5I_DATASET: r = H5Dclose(id_); break;
    case H5I_DATASPACE: r = H5Sclose(id_); break;
    case H5I_DATATYPE: r = H5Tclose(id_); break;
    case H5I_ATTR: r = H5Aclose(id_); break;
    case H5I_GENPROP_LST: r = H5Pclose(id_); break;
    default: break;
  }
  if (r < 0) spdlog::error("HDF5: closing identifier {} failed", static_cast<long long>(id_));
}

H5Handle& H5Handle::operator=(H5Handle&& o) noexcept {
  if (this != &o) {
    H5Handle tmp(id_);
    id_ = o.id_;
    o.id_ = H5I_INVALID_HID;
  }
  return *this;
}

H5Handle create_file(const std::string& path) {
  hid_t f;
  H5E_BEGIN_TRY { f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT); }
  H5E_END_TRY;
  if (f < 0) throw InputError(path + ": cannot create HDF5 file (does the directory exist and is it writable?)");
  return H5Handle(f);
}

namespace {
template <class T>
void write_typed(hid_t loc, const std::string& name, hid_t type, const T* data,
                 const std::vector<hsize_t>& dims) {
  H5Handle space(GMI_H5_CHECK(H5Screate_simple(int(dims.size()), dims.data(), nullptr)));
  H5Handle set(GMI_H5_CHECK(
      H5Dcreate2(loc, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
  GMI_H5_CHECK(H5Dwrite(set, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data));
}
}  // namespace

void write(hid_t loc, const std::string& name, const float* data, const std::vector<hsize_t>& dims) {
  write_typed(loc, name, H5T_NATIVE_FLOAT, data, dims);
}
void write(hid_t loc, const std::string& name, const double* data, const std::vector<hsize_t>& dims) {
  write_typed(loc, name, H5T_NATIVE_DOUBLE, data, dims);
}
void write(hid_t loc, const std::string& name, const std::uint8_t* data,
           const std::vector<hsize_t>& dims) {
  write_typed(loc, name, H5T_NATIVE_UINT8, data, dims);
}
void write(hid_t loc, const std::string& name, const std::int64_t* data,
           const std::vector<hsize_t>& dims) {
  write_typed(loc, name, H5T_NATIVE_INT64, data, dims);
}

void write_attribute(hid_t loc, const std::string& name, const std::string& value) {
  H5Handle type(GMI_H5_CHECK(H5Tcopy(H5T_C_S1)));
  GMI_H5_CHECK(H5Tset_size(type, value.empty() ? 1 : value.size()));
  H5Handle space(GMI_H5_CHECK(H5Screate(H5S_SCALAR)));
  H5Handle attr(GMI_H5_CHECK(H5Acreate2(loc, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT)));
  GMI_H5_CHECK(H5Awrite(attr, type, value.c_str()));
}

}  // namespace io
}  // namespace gmi
