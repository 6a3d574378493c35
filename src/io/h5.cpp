#include "src/io/h5.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

#include "kernels/core/error.hpp"

namespace gmi {
namespace detail {
namespace {
struct Stack {
  std::string top, innermost;
};
herr_t walk(unsigned n, const H5E_error2_t* e, void* out) {
  auto* s = static_cast<Stack*>(out);
  const std::string text = std::string(e->func_name ? e->func_name : "?") + ": " + (e->desc ? e->desc : "?");
  if (n == 0) s->top = text;
  s->innermost = text;
  return 0;
}
}  // namespace

std::string h5_error_string() {
  Stack s;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, walk, &s);
  if (s.top.empty()) return "see the HDF5 error stack";
  return s.innermost == s.top ? s.top : s.top + " (" + s.innermost + ")";
}
}  // namespace detail

namespace io {

long open_files() {
  const ssize_t n = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_FILE);
  return n < 0 ? 0 : long(n);
}

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

namespace {
/// Errors are reported through exceptions, so HDF5's own stack printing is switched off.
void quiet() {
  static const bool once = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)once;
}
}  // namespace

template <> hid_t native_type<float>() { return H5T_NATIVE_FLOAT; }
template <> hid_t native_type<double>() { return H5T_NATIVE_DOUBLE; }
template <> hid_t native_type<std::int32_t>() { return H5T_NATIVE_INT32; }
template <> hid_t native_type<std::int64_t>() { return H5T_NATIVE_INT64; }
template <> hid_t native_type<std::uint64_t>() { return H5T_NATIVE_UINT64; }
template <> hid_t native_type<std::uint8_t>() { return H5T_NATIVE_UINT8; }
template <> std::string type_name<float>() { return "float32"; }
template <> std::string type_name<double>() { return "float64"; }
template <> std::string type_name<std::int32_t>() { return "int32"; }
template <> std::string type_name<std::int64_t>() { return "int64"; }
template <> std::string type_name<std::uint64_t>() { return "uint64"; }
template <> std::string type_name<std::uint8_t>() { return "uint8"; }

H5Handle create_file(const std::string& path) {
  quiet();
  hid_t f;
  H5E_BEGIN_TRY { f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT); }
  H5E_END_TRY;
  if (f < 0) throw InputError(path + ": cannot create HDF5 file (does the directory exist and is it writable?)");
  return H5Handle(f);
}

H5Handle create_file_parallel(const std::string& path, MPI_Comm comm) {
  quiet();
  H5Handle fapl(GMI_H5_CHECK(H5Pcreate(H5P_FILE_ACCESS)));
  GMI_H5_CHECK(H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL));
  // Collective metadata: one rank reads and writes metadata on behalf of all (fewer small I/Os).
  GMI_H5_CHECK(H5Pset_all_coll_metadata_ops(fapl, true));
  GMI_H5_CHECK(H5Pset_coll_metadata_write(fapl, true));
  const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  if (f < 0)
    throw Error(path + ": cannot create HDF5 file collectively (" + detail::h5_error_string() + ")");
  return H5Handle(f);
}

H5Handle open_file(const std::string& path) {
  quiet();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw InputError(path + ": no such file");
  if (std::filesystem::is_directory(path, ec)) throw InputError(path + ": is a directory, expected an HDF5 file");
  htri_t is_h5;
  H5E_BEGIN_TRY { is_h5 = H5Fis_hdf5(path.c_str()); }
  H5E_END_TRY;
  if (is_h5 <= 0)
    throw InputError(path + ": not an HDF5 file (truncated, or another format)");
  hid_t f;
  H5E_BEGIN_TRY { f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT); }
  H5E_END_TRY;
  if (f < 0) throw InputError(path + ": cannot open as HDF5 (" + detail::h5_error_string() + ")");
  return H5Handle(f);
}

H5Handle create_group(hid_t loc, const std::string& name) {
  return H5Handle(GMI_H5_CHECK(H5Gcreate2(loc, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
}

H5Handle open_group(hid_t loc, const std::string& name) {
  if (!exists(loc, name)) throw Error("group /" + name + " is missing");
  return H5Handle(GMI_H5_CHECK(H5Gopen2(loc, name.c_str(), H5P_DEFAULT)));
}

bool exists(hid_t loc, const std::string& path) {
  // Check each component: H5Lexists fails (rather than answering false) below a missing group.
  std::string prefix;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t slash = path.find('/', start);
    prefix = path.substr(0, slash);
    htri_t e;
    H5E_BEGIN_TRY { e = H5Lexists(loc, prefix.c_str(), H5P_DEFAULT); }
    H5E_END_TRY;
    if (e <= 0) return false;
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return true;
}

template <class T>
void write_rows(hid_t loc, const std::string& name, const T* data, const std::vector<hsize_t>& dims,
                hsize_t row0, hsize_t rows, hsize_t chunk_rows) {
  GMI_REQUIRE(!dims.empty() && row0 + rows <= dims[0], name + ": rows outside the dataset");
  const hid_t type = native_type<T>();
  H5Handle space(GMI_H5_CHECK(H5Screate_simple(int(dims.size()), dims.data(), nullptr)));
  H5Handle dcpl(GMI_H5_CHECK(H5Pcreate(H5P_DATASET_CREATE)));
  if (dims[0] > 0) {
    std::vector<hsize_t> chunk = dims;
    chunk[0] = std::max<hsize_t>(1, std::min(chunk_rows, dims[0]));
    GMI_H5_CHECK(H5Pset_chunk(dcpl, int(chunk.size()), chunk.data()));
    GMI_H5_CHECK(H5Pset_fletcher32(dcpl));
  }
  H5Handle set(GMI_H5_CHECK(H5Dcreate2(loc, name.c_str(), type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT)));
  // Parallel HDF5 writes filtered datasets only collectively; every rank takes part, some with
  // an empty selection.
  H5Handle fapl(GMI_H5_CHECK(H5Fget_access_plist(GMI_H5_CHECK(H5Iget_file_id(set)))));
  H5Handle xfer(GMI_H5_CHECK(H5Pcreate(H5P_DATASET_XFER)));
  const bool parallel = H5Pget_driver(fapl) == H5FD_MPIO;
  if (parallel) GMI_H5_CHECK(H5Pset_dxpl_mpio(xfer, H5FD_MPIO_COLLECTIVE));
  std::vector<hsize_t> start(dims.size(), 0), count = dims;
  start[0] = row0;
  count[0] = rows;
  H5Handle file_space(GMI_H5_CHECK(H5Dget_space(set)));
  H5Handle mem_space(GMI_H5_CHECK(H5Screate_simple(int(count.size()), count.data(), nullptr)));
  if (rows > 0) {
    GMI_H5_CHECK(H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr));
  } else {
    GMI_H5_CHECK(H5Sselect_none(file_space));
    GMI_H5_CHECK(H5Sselect_none(mem_space));
  }
  if (dims[0] > 0) GMI_H5_CHECK(H5Dwrite(set, type, mem_space, file_space, xfer, data));
}

#define GMI_H5_INSTANTIATE(T)                                                                   \
  template void write_rows<T>(hid_t, const std::string&, const T*, const std::vector<hsize_t>&, \
                              hsize_t, hsize_t, hsize_t);                                       \
  template std::vector<T> read_rows<T>(hid_t, const std::string&, hsize_t, hssize_t);

std::size_t DatasetInfo::elements() const {
  std::size_t n = 1;
  for (hsize_t d : dims) n *= std::size_t(d);
  return n;
}

namespace {
std::string describe_type(hid_t t) {
  const H5T_class_t c = H5Tget_class(t);
  const std::size_t size = H5Tget_size(t);
  if (c == H5T_FLOAT) return "float" + std::to_string(8 * size);
  if (c == H5T_INTEGER) return (H5Tget_sign(t) == H5T_SGN_NONE ? "uint" : "int") + std::to_string(8 * size);
  if (c == H5T_STRING) return "string";
  return "other";
}
}  // namespace

DatasetInfo dataset_info(hid_t loc, const std::string& name) {
  if (!exists(loc, name)) throw Error("dataset /" + name + " is missing");
  H5Handle set(GMI_H5_CHECK(H5Dopen2(loc, name.c_str(), H5P_DEFAULT)));
  H5Handle space(GMI_H5_CHECK(H5Dget_space(set)));
  H5Handle type(GMI_H5_CHECK(H5Dget_type(set)));
  DatasetInfo info;
  const int rank = GMI_H5_CHECK(H5Sget_simple_extent_ndims(space));
  info.dims.resize(std::size_t(rank));
  GMI_H5_CHECK(H5Sget_simple_extent_dims(space, info.dims.data(), nullptr));
  info.type = describe_type(type);
  H5Handle dcpl(GMI_H5_CHECK(H5Dget_create_plist(set)));
  if (rank > 0 && H5Pget_layout(dcpl) == H5D_CHUNKED) {
    std::vector<hsize_t> chunk(std::size_t(rank), 0);
    GMI_H5_CHECK(H5Pget_chunk(dcpl, rank, chunk.data()));
    info.chunk_rows = chunk[0];
  }
  return info;
}

template <class T>
std::vector<T> read_rows(hid_t loc, const std::string& name, hsize_t row0, hssize_t rows) {
  const DatasetInfo info = dataset_info(loc, name);
  if (info.type != type_name<T>())
    throw Error("dataset /" + name + " has type " + info.type + ", expected " + type_name<T>());
  if (info.dims.empty()) throw Error("dataset /" + name + " is a scalar, expected an array");
  const hsize_t n = rows < 0 ? info.dims[0] - std::min(row0, info.dims[0]) : hsize_t(rows);
  if (row0 + n > info.dims[0])
    throw Error("dataset /" + name + " has " + std::to_string(info.dims[0]) + " rows, expected at least " +
                std::to_string(row0 + n));
  std::vector<hsize_t> start(info.dims.size(), 0), count = info.dims;
  start[0] = row0;
  count[0] = n;
  std::size_t total = 1;
  for (hsize_t c : count) total *= std::size_t(c);
  std::vector<T> out(total);
  if (total == 0) return out;
  H5Handle set(GMI_H5_CHECK(H5Dopen2(loc, name.c_str(), H5P_DEFAULT)));
  H5Handle file_space(GMI_H5_CHECK(H5Dget_space(set)));
  GMI_H5_CHECK(H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr));
  H5Handle mem_space(GMI_H5_CHECK(H5Screate_simple(int(count.size()), count.data(), nullptr)));
  if (H5Dread(set, native_type<T>(), mem_space, file_space, H5P_DEFAULT, out.data()) < 0) {
    const std::string why = detail::h5_error_string();
    const bool checksum = why.find("checksum") != std::string::npos || why.find("Fletcher") != std::string::npos;
    throw Error("dataset /" + name + (checksum ? ": checksum mismatch (the data is damaged)" : ": cannot read (" + why + ")"));
  }
  return out;
}

GMI_H5_INSTANTIATE(float)
GMI_H5_INSTANTIATE(double)
GMI_H5_INSTANTIATE(std::int32_t)
GMI_H5_INSTANTIATE(std::int64_t)
GMI_H5_INSTANTIATE(std::uint64_t)
GMI_H5_INSTANTIATE(std::uint8_t)
#undef GMI_H5_INSTANTIATE

void write_attribute(hid_t loc, const std::string& name, std::int64_t value) {
  H5Handle space(GMI_H5_CHECK(H5Screate(H5S_SCALAR)));
  H5Handle attr(GMI_H5_CHECK(H5Acreate2(loc, name.c_str(), H5T_NATIVE_INT64, space, H5P_DEFAULT, H5P_DEFAULT)));
  GMI_H5_CHECK(H5Awrite(attr, H5T_NATIVE_INT64, &value));
}

void write_attribute(hid_t loc, const std::string& name, double value) {
  H5Handle space(GMI_H5_CHECK(H5Screate(H5S_SCALAR)));
  H5Handle attr(GMI_H5_CHECK(H5Acreate2(loc, name.c_str(), H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT)));
  GMI_H5_CHECK(H5Awrite(attr, H5T_NATIVE_DOUBLE, &value));
}

namespace {
H5Handle open_attribute(hid_t loc, const std::string& name, H5T_class_t cls, const char* expected) {
  htri_t e;
  H5E_BEGIN_TRY { e = H5Aexists(loc, name.c_str()); }
  H5E_END_TRY;
  if (e <= 0) throw Error("attribute '" + name + "' is missing");
  H5Handle attr(GMI_H5_CHECK(H5Aopen(loc, name.c_str(), H5P_DEFAULT)));
  H5Handle type(GMI_H5_CHECK(H5Aget_type(attr)));
  H5Handle space(GMI_H5_CHECK(H5Aget_space(attr)));
  if (H5Tget_class(type) != cls || H5Sget_simple_extent_npoints(space) != 1)
    throw Error("attribute '" + name + "' is " + describe_type(type) + ", expected " + expected);
  return attr;
}
}  // namespace

std::string read_string_attribute(hid_t loc, const std::string& name) {
  H5Handle attr = open_attribute(loc, name, H5T_STRING, "a string");
  H5Handle type(GMI_H5_CHECK(H5Aget_type(attr)));
  if (H5Tis_variable_str(type) > 0) {
    H5Handle mem(GMI_H5_CHECK(H5Tcopy(H5T_C_S1)));
    GMI_H5_CHECK(H5Tset_size(mem, H5T_VARIABLE));
    char* p = nullptr;
    GMI_H5_CHECK(H5Aread(attr, mem, &p));
    std::string out = p ? p : "";
    H5free_memory(p);
    return out;
  }
  const std::size_t size = H5Tget_size(type);
  std::string out(size, '\0');
  GMI_H5_CHECK(H5Aread(attr, type, out.data()));
  out.resize(std::min(out.size(), out.find('\0')));
  return out;
}

std::int64_t read_int_attribute(hid_t loc, const std::string& name) {
  H5Handle attr = open_attribute(loc, name, H5T_INTEGER, "an integer");
  std::int64_t v = 0;
  GMI_H5_CHECK(H5Aread(attr, H5T_NATIVE_INT64, &v));
  return v;
}

double read_double_attribute(hid_t loc, const std::string& name) {
  H5Handle attr = open_attribute(loc, name, H5T_FLOAT, "a number");
  double v = 0;
  GMI_H5_CHECK(H5Aread(attr, H5T_NATIVE_DOUBLE, &v));
  return v;
}

namespace {
herr_t collect(hid_t, const char* name, const H5O_info_t* info, void* out) {
  if (info->type == H5O_TYPE_DATASET) static_cast<std::vector<std::string>*>(out)->push_back(name);
  return 0;
}
}  // namespace

std::vector<std::string> list_datasets(hid_t loc) {
  std::vector<std::string> out;
  GMI_H5_CHECK(H5Ovisit(loc, H5_INDEX_NAME, H5_ITER_INC, collect, &out));
  return out;
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
