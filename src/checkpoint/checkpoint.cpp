#include "src/checkpoint/checkpoint.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <sstream>
#include <type_traits>
#include <algorithm>

#include "kernels/core/error.hpp"
#include "mpi/environment.hpp"
#include "mpi/topology.hpp"
#include "src/algos/registry.hpp"
#include "src/config/config.hpp"
#include "src/io/h5.hpp"

namespace gmi::checkpoint {
namespace {

using io::H5Handle;

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + v[i];
  return s;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(item);
  return out;
}

/// A dataset every rank holds identically: rank 0 writes it.
template <class T>
void write_shared(hid_t loc, const std::string& name, const std::vector<T>& v, std::vector<hsize_t> dims,
                  bool root) {
  io::write_rows<T>(loc, name, v.data(), dims, 0, root ? dims[0] : 0, dims[0]);
}

/// A dataset of G*N rows of which this GMI writes its N (one chunk per GMI).
template <class T>
void write_mine(hid_t loc, const std::string& name, const std::vector<T>& v, int gmi, int gmis,
                std::vector<hsize_t> inner = {}) {
  hsize_t per_row = 1;
  for (hsize_t d : inner) per_row *= d;
  const hsize_t rows = hsize_t(v.size()) / per_row;
  std::vector<hsize_t> dims = {rows * hsize_t(gmis)};
  dims.insert(dims.end(), inner.begin(), inner.end());
  io::write_rows<T>(loc, name, v.data(), dims, rows * hsize_t(gmi), rows, rows);
}

void write_meta(hid_t f, const Meta& m, bool root) {
  H5Handle g = io::create_group(f, "meta");
  io::write_attribute(g, "format_version", m.format_version);
  io::write_attribute(g, "gmi_drl_version", m.gmi_drl_version);
  io::write_attribute(g, "config", m.config);
  io::write_attribute(g, "created", m.created);
  io::write_attribute(g, "run_dir", m.run_dir);
  io::write_attribute(g, "num_nodes", m.num_nodes);
  io::write_attribute(g, "num_gpus", m.num_gpus);
  io::write_attribute(g, "num_gmis", m.num_gmis);
  io::write_attribute(g, "iteration", m.iteration);
  io::write_attribute(g, "env_steps", m.env_steps);
  io::write_attribute(g, "updates", m.updates);
  io::write_attribute(g, "wall_time_s", m.wall_time_s);
  io::write_attribute(g, "algo", m.algo);
  io::write_attribute(g, "env", m.env);
  io::write_attribute(g, "envs_per_gmi", m.envs_per_gmi);
  io::write_attribute(g, "simulators_per_gmi", m.simulators_per_gmi);
  io::write_attribute(g, "obs_dim", m.obs_dim);
  io::write_attribute(g, "num_params", m.num_params);
  io::write_attribute(g, "seed", m.seed);
  io::write_attribute(g, "num_steps", m.num_steps);
  io::write_attribute(g, "update_epochs", m.update_epochs);
  io::write_attribute(g, "nonfinite_streak", m.nonfinite_streak);
  io::write_attribute(g, "reducer", m.reducer);
  write_shared(g, "gmis_per_gpu", m.gmis_per_gpu, {hsize_t(m.gmis_per_gpu.size())}, root);
}

Meta read_meta_group(hid_t f) {
  H5Handle g = io::open_group(f, "meta");
  Meta m;
  m.format_version = io::read_int_attribute(g, "format_version");
  if (m.format_version < 1 || m.format_version > kFormatVersion)
    throw Error(fmt::format("format version {}, this gmi_drl reads versions 1 to {}", m.format_version, kFormatVersion));
  m.gmi_drl_version = io::read_string_attribute(g, "gmi_drl_version");
  m.config = io::read_string_attribute(g, "config");
  m.created = io::read_string_attribute(g, "created");
  m.run_dir = io::read_string_attribute(g, "run_dir");
  m.num_nodes = io::read_int_attribute(g, "num_nodes");
  m.num_gpus = io::read_int_attribute(g, "num_gpus");
  m.num_gmis = io::read_int_attribute(g, "num_gmis");
  m.iteration = io::read_int_attribute(g, "iteration");
  m.env_steps = io::read_int_attribute(g, "env_steps");
  m.updates = io::read_int_attribute(g, "updates");
  m.wall_time_s = io::read_double_attribute(g, "wall_time_s");
  m.algo = m.format_version >= 2 ? io::read_string_attribute(g, "algo") : std::string("ppo");
  m.env = io::read_string_attribute(g, "env");
  m.envs_per_gmi = io::read_int_attribute(g, "envs_per_gmi");
  m.simulators_per_gmi = m.format_version >= 3 ? io::read_int_attribute(g, "simulators_per_gmi") : 1;
  m.obs_dim = io::read_int_attribute(g, "obs_dim");
  m.num_params = io::read_int_attribute(g, "num_params");
  m.seed = io::read_int_attribute(g, "seed");
  m.num_steps = io::read_int_attribute(g, "num_steps");
  m.update_epochs = io::read_int_attribute(g, "update_epochs");
  m.nonfinite_streak = io::read_int_attribute(g, "nonfinite_streak");
  m.reducer = io::read_string_attribute(g, "reducer");
  m.gmis_per_gpu = io::read_rows<std::int64_t>(g, "gmis_per_gpu");
  if (m.num_gmis < 1 || m.envs_per_gmi < 1 || m.simulators_per_gmi < 1 || m.obs_dim < 1 || m.num_params < 1 || m.iteration < 0)
    throw Error(fmt::format("/meta has impossible sizes (num_gmis {}, envs_per_gmi {}, obs_dim {}, num_params {}, iteration {})",
                            m.num_gmis, m.envs_per_gmi, m.obs_dim, m.num_params, m.iteration));
  return m;
}

/// Expected shape of every dataset, from /meta.
void check_shape(hid_t f, const std::string& name, const std::vector<hsize_t>& expected, const std::string& type) {
  const io::DatasetInfo info = io::dataset_info(f, name);
  if (info.dims != expected || (!type.empty() && info.type != type)) {
    auto dims = [](const std::vector<hsize_t>& d) {
      std::string s = "[";
      for (std::size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
      return s + "]";
    };
    throw Error(fmt::format("dataset /{} is {} {}, expected {} {}", name, info.type, dims(info.dims),
                            type.empty() ? info.type : type, dims(expected)));
  }
}

/// Chunk rows for a replay shard of `rows` rows: under 256 MiB a chunk; the whole shard when it
/// fits, else a divisor of the shard's rows no smaller than a quarter of the limit (a chunk then
/// holds one GMI's rows only), else the limit (chunks span two GMIs' rows; the writes are
/// collective, so that is allowed, only slower).
hsize_t replay_chunk_rows(hsize_t rows, hsize_t row_bytes) {
  const hsize_t limit = std::max<hsize_t>(1, (hsize_t(256) << 20) / std::max<hsize_t>(row_bytes, 1));
  if (rows <= limit) return std::max<hsize_t>(rows, 1);
  for (hsize_t c = limit; c >= std::max<hsize_t>(limit / 4, 1); --c)
    if (rows % c == 0) return c;
  return limit;
}

void check_shapes(hid_t f, const Meta& m) {
  const hsize_t P = hsize_t(m.num_params), G = hsize_t(m.num_gmis), GN = G * hsize_t(m.envs_per_gmi),
                od = hsize_t(m.obs_dim);
  check_shape(f, "meta/gmis_per_gpu", {hsize_t(m.num_gpus)}, "int64");
  check_shape(f, "policy/params", {P}, "float32");
  check_shape(f, "optimizer/m", {P}, "float32");
  check_shape(f, "optimizer/v", {P}, "float32");
  if (m.format_version < 2 || io::exists(f, "normalizer")) {
    check_shape(f, "normalizer/obs", {3, od}, "float64");
    check_shape(f, "normalizer/return", {3, 1}, "float64");
  }
  check_shape(f, "rng/key", {G}, "uint64");
  check_shape(f, "rng/env_episode", {GN}, "uint64");
  {
    H5Handle g = io::open_group(f, "rng");
    for (const std::string& name : io::list_datasets(g))
      if (name.rfind("next_", 0) == 0) check_shape(g, name, {G}, "int64");
  }
  check_shape(f, "experience/obs", {GN, od}, "float32");
  if (m.format_version < 2 || io::exists(f, "experience/return_acc")) check_shape(f, "experience/return_acc", {GN}, "float32");
  H5Handle env = io::open_group(f, "experience/env");
  for (const std::string& name : io::list_datasets(env)) {
    // One row per env: a value, or a vector (a simulator's state)
    const io::DatasetInfo info = io::dataset_info(env, name);
    check_shape(env, name, info.dims.size() == 2 ? std::vector<hsize_t>{GN, info.dims[1]} : std::vector<hsize_t>{GN}, "");
  }
  if (io::exists(f, "experience/replay")) {
    H5Handle r = io::open_group(f, "experience/replay");
    const std::int64_t cap = io::read_int_attribute(r, "capacity"), size = io::read_int_attribute(r, "size"),
                       cursor = io::read_int_attribute(r, "cursor");
    if (size < 0 || size > cap || cursor < 0 || cursor >= std::max<std::int64_t>(cap, 1))
      throw Error(fmt::format("/experience/replay: size {} and cursor {} do not fit capacity {}", size, cursor, cap));
    const hsize_t GS = G * hsize_t(size);
    const io::DatasetInfo a = io::dataset_info(r, "actions");
    check_shape(r, "obs", {GS, od}, "float32");
    check_shape(r, "next_obs", {GS, od}, "float32");
    check_shape(r, "actions", {GS, a.dims.size() == 2 ? a.dims[1] : 0}, "float32");
    check_shape(r, "rewards", {GS}, "float32");
    check_shape(r, "terminated", {GS}, "uint8");
  }
  H5Handle mg = io::open_group(f, "metrics");
  const std::vector<std::string> columns = split(io::read_string_attribute(mg, "columns"));
  const io::DatasetInfo t = io::dataset_info(mg, "table");
  if (t.dims.size() != 2 || t.dims[1] != columns.size() || t.type != "float64")
    throw Error(fmt::format("dataset /metrics/table does not have {} float64 columns", columns.size()));
  // The stored config must parse and agree with the sizes.
  config::Config cfg;
  try {
    cfg = config::parse(m.config, "(/meta config)", {}, int(m.num_gmis));
  } catch (const InputError& e) {
    throw Error(std::string("/meta config does not parse: ") + e.what());
  }
  const std::size_t params = algos::num_params(cfg);
  if (std::int64_t(params) != m.num_params || cfg.env.num_envs * m.simulators_per_gmi != m.envs_per_gmi ||
      cfg.env.name != m.env ||
      cfg.algo != m.algo)
    throw Error(fmt::format("/meta config ({} {} x {}, {} params) disagrees with /meta ({} {} x {}, {} params)",
                            cfg.algo, cfg.env.name, cfg.env.num_envs, params, m.algo, m.env, m.envs_per_gmi,
                            m.num_params));
}

/// /meta, with every dataset's shape checked against it (no raw data read).
Meta checked_meta(hid_t f) {
  Meta m = read_meta_group(f);
  check_shapes(f, m);
  return m;
}

/// Run `f`; a problem with the file becomes one InputError line naming it.
template <class F>
auto about(const std::string& path, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const InputError&) {
    throw;
  } catch (const Error& e) {
    throw InputError(path + ": " + e.what());
  }
}

std::vector<std::string> env_arrays(hid_t f) {
  H5Handle env = io::open_group(f, "experience/env");
  return io::list_datasets(env);
}

envs::StateArray read_env_array(hid_t loc, const std::string& name, const std::string& as, bool rng, hsize_t row0,
                                hsize_t rows) {
  const io::DatasetInfo info = io::dataset_info(loc, name);
  envs::StateArray a;
  a.name = as;
  a.rng = rng;
  a.width = info.dims.size() == 2 ? int(info.dims[1]) : 1;
  if (info.type == "float32") a.values = io::read_rows<float>(loc, name, row0, hssize_t(rows));
  else if (info.type == "float64") a.values = io::read_rows<double>(loc, name, row0, hssize_t(rows));
  else if (info.type == "int32") a.values = io::read_rows<std::int32_t>(loc, name, row0, hssize_t(rows));
  else if (info.type == "uint64") a.values = io::read_rows<std::uint64_t>(loc, name, row0, hssize_t(rows));
  else throw Error("dataset /" + name + " has unsupported type " + info.type);
  return a;
}

/// write()'s file, flushed; closed (collectively) when it returns.
void write_contents(const std::string& path, MPI_Comm comm, const Meta& meta, const algos::TrainerState& s,
                    const Metrics& metrics, const std::function<void()>& before_close) {
  const int gmi = mpi::comm_rank(comm);
  const bool root = gmi == 0;
  const int G = int(meta.num_gmis);
  H5Handle f = io::create_file_parallel(path, comm);
  write_meta(f, meta, root);
  const hsize_t P = s.params.size();
  {
    H5Handle g = io::create_group(f, "policy");
    write_shared(g, "params", s.params, {P}, root);
  }
  {
    H5Handle g = io::create_group(f, "optimizer");
    write_shared(g, "m", s.adam_m, {P}, root);
    write_shared(g, "v", s.adam_v, {P}, root);
    io::write_attribute(g, "step", s.adam_step);
  }
  if (!s.obs_rms.empty()) {
    H5Handle g = io::create_group(f, "normalizer");
    write_shared(g, "obs", s.obs_rms, {3, hsize_t(s.obs_rms.size() / 3)}, root);
    write_shared(g, "return", s.ret_rms, {3, 1}, root);
  }
  {
    H5Handle g = io::create_group(f, "algo");
    io::write_attribute(g, "name", meta.algo);
    std::vector<std::string> names;
    std::vector<std::int64_t> values;
    for (const auto& [name, value] : s.counters) names.push_back(name), values.push_back(value);
    io::write_attribute(g, "counter_names", join(names));
    write_shared(g, "counters", values, {hsize_t(values.size())}, root);
    for (const auto& [name, t] : s.tensors) write_shared(g, name, t, {hsize_t(t.size())}, root);
    for (const auto& [name, t] : s.tensors64) write_shared(g, name, t, {hsize_t(t.size())}, root);
  }
  {
    H5Handle g = io::create_group(f, "rng");
    io::write_attribute(g, "generator",
                        std::string("Philox4x32-10, counter-based: cuRAND curand_Philox4x32_10 on GPUs, "
                                    "Random123 on the host (kernels/core/random.hpp)"));
    const std::vector<std::uint64_t> key = {std::uint64_t(meta.seed)};
    write_mine(g, "key", key, gmi, G);
    for (const auto& [name, value] : s.rng) write_mine(g, name, std::vector<std::int64_t>{value}, gmi, G);
    for (const envs::StateArray& a : s.env)
      if (a.rng) std::visit([&](const auto& v) { write_mine(g, "env_" + a.name, v, gmi, G); }, a.values);
  }
  {
    H5Handle g = io::create_group(f, "experience");
    io::write_attribute(g, "rollout", algos::algorithm(meta.algo).checkpoint.experience);
    write_mine(g, "obs", s.obs, gmi, G, {hsize_t(meta.obs_dim)});
    if (!s.return_acc.empty()) write_mine(g, "return_acc", s.return_acc, gmi, G);
    H5Handle e = io::create_group(g, "env");
    for (const envs::StateArray& a : s.env)
      if (!a.rng)
        std::visit([&](const auto& v) {
          write_mine(e, a.name, v, gmi, G, a.width > 1 ? std::vector<hsize_t>{hsize_t(a.width)} : std::vector<hsize_t>{});
        }, a.values);
    if (s.replay) {
      // Every GMI's shard holds the same number of rows (all add N per step); each writes its own.
      const rl::ReplayState& r = *s.replay;
      H5Handle rg = io::create_group(g, "replay");
      io::write_attribute(rg, "capacity", meta.replay_capacity);
      io::write_attribute(rg, "size", r.size);
      io::write_attribute(rg, "cursor", r.cursor);
      const hsize_t S = hsize_t(r.size), od = hsize_t(meta.obs_dim), ad = S > 0 ? hsize_t(r.actions.size()) / S : 1;
      const hsize_t chunk = replay_chunk_rows(S, 4 * (2 * od + ad + 2));
      auto mine = [&](const char* name, const auto& v, std::vector<hsize_t> inner) {
        using T = typename std::decay_t<decltype(v)>::value_type;
        std::vector<hsize_t> dims = {S * hsize_t(G)};
        dims.insert(dims.end(), inner.begin(), inner.end());
        io::write_rows<T>(rg, name, v.data(), dims, S * hsize_t(gmi), S, chunk);
      };
      mine("obs", r.obs, {od});
      mine("next_obs", r.next_obs, {od});
      mine("actions", r.actions, {ad});
      mine("rewards", r.rewards, {});
      mine("terminated", r.terminated, {});
    }
  }
  {
    H5Handle g = io::create_group(f, "metrics");
    io::write_attribute(g, "columns", join(metrics.columns));
    write_shared(g, "table", metrics.values, {hsize_t(metrics.rows()), hsize_t(metrics.columns.size())}, root);
  }
  if (before_close) before_close();
  GMI_H5_CHECK(H5Fflush(f, H5F_SCOPE_GLOBAL));
}

}  // namespace

void write(const std::string& path, MPI_Comm comm, const Meta& meta, const algos::TrainerState& s,
           const Metrics& metrics, const std::function<void()>& before_close) {
  write_contents(path, comm, meta, s, metrics, before_close);
  // What the file system kept.  A write that runs out of space can go unreported through MPI-IO
  // (seen on a tmpfs filled while 3 GMIs wrote: the file closed without an error and lacked
  // /meta), so rank 0 reads /meta and every dataset's shape back before the file may be renamed
  // (its raw data is not read again), and every rank ends alike if it fails.
  std::string error;
  if (mpi::comm_rank(comm) == 0) {
    try {
      about(path, [&] {
        checked_meta(io::open_file(path));
      });
    } catch (const std::exception& e) {
      error = std::string("it reads back incomplete: ") + e.what();
    }
  }
  error = mpi::agree_on_error(error, comm);
  if (!error.empty()) throw Error(error);
}

Meta read_meta(const std::string& path) {
  return about(path, [&] {
    H5Handle f = io::open_file(path);
    return read_meta_group(f);
  });
}

Contents read(const std::string& path, int gmi) {
  return about(path, [&] {
    H5Handle f = io::open_file(path);
    Contents c;
    c.meta = checked_meta(f);
    const Meta& m = c.meta;
    algos::TrainerState& s = c.state;
    s.iteration = m.iteration;
    s.nonfinite_streak = int(m.nonfinite_streak);
    s.params = io::read_rows<float>(f, "policy/params");
    s.adam_m = io::read_rows<float>(f, "optimizer/m");
    s.adam_v = io::read_rows<float>(f, "optimizer/v");
    {
      H5Handle g = io::open_group(f, "optimizer");
      s.adam_step = io::read_int_attribute(g, "step");
    }
    if (io::exists(f, "normalizer")) {
      s.obs_rms = io::read_rows<double>(f, "normalizer/obs");
      s.ret_rms = io::read_rows<double>(f, "normalizer/return");
    }
    if (io::exists(f, "algo")) {
      H5Handle g = io::open_group(f, "algo");
      const std::vector<std::string> names = split(io::read_string_attribute(g, "counter_names"));
      const std::vector<std::int64_t> values = io::read_rows<std::int64_t>(g, "counters");
      if (names.size() != values.size())
        throw Error(fmt::format("/algo has {} counter names for {} counters", names.size(), values.size()));
      for (std::size_t i = 0; i < names.size(); ++i) s.counters.emplace_back(names[i], values[i]);
      for (const std::string& name : io::list_datasets(g)) {
        if (name == "counters") continue;
        if (io::dataset_info(g, name).type == "float64")
          s.tensors64.emplace_back(name, io::read_rows<double>(g, name));
        else
          s.tensors.emplace_back(name, io::read_rows<float>(g, name));
      }
    }
    if (gmi >= 0) {
      if (gmi >= m.num_gmis) throw Error(fmt::format("has {} GMIs, no GMI {}", m.num_gmis, gmi));
      const hsize_t N = hsize_t(m.envs_per_gmi), row0 = hsize_t(gmi) * N;
      s.obs = io::read_rows<float>(f, "experience/obs", row0, hssize_t(N));
      if (io::exists(f, "experience/return_acc"))
        s.return_acc = io::read_rows<float>(f, "experience/return_acc", row0, hssize_t(N));
      for (const std::string& name : env_arrays(f))
        s.env.push_back(read_env_array(f, "experience/env/" + name, name, false, row0, N));
      s.env.push_back(read_env_array(f, "rng/env_episode", "episode", true, row0, N));
      if (io::exists(f, "experience/replay")) {
        H5Handle r = io::open_group(f, "experience/replay");
        rl::ReplayState rs;
        rs.size = io::read_int_attribute(r, "size");
        rs.cursor = io::read_int_attribute(r, "cursor");
        const hsize_t S = hsize_t(rs.size), at = hsize_t(gmi) * S;
        rs.obs = io::read_rows<float>(r, "obs", at, hssize_t(S));
        rs.next_obs = io::read_rows<float>(r, "next_obs", at, hssize_t(S));
        rs.actions = io::read_rows<float>(r, "actions", at, hssize_t(S));
        rs.rewards = io::read_rows<float>(r, "rewards", at, hssize_t(S));
        rs.terminated = io::read_rows<std::uint8_t>(r, "terminated", at, hssize_t(S));
        s.replay = std::move(rs);
      }
    }
    H5Handle mg = io::open_group(f, "metrics");
    c.metrics.columns = split(io::read_string_attribute(mg, "columns"));
    c.metrics.values = io::read_rows<double>(mg, "table");
    return c;
  });
}

Meta verify(const std::string& path) {
  return about(path, [&] {
    H5Handle f = io::open_file(path);
    const Meta m = checked_meta(f);
    // Read every dataset once: the Fletcher32 filter checks each chunk as it is read.
    // Slabs of at most ~64 MiB, so a large replay buffer is checked without holding it whole.
    for (const std::string& name : io::list_datasets(f)) {
      const io::DatasetInfo info = io::dataset_info(f, name);
      const hsize_t rows = info.dims.empty() ? 1 : info.dims[0];
      const hsize_t per_row = rows > 0 ? std::max<hsize_t>(info.elements() / rows, 1) : 1;
      hsize_t slab = std::max<hsize_t>(1, (hsize_t(64) << 20) / (8 * per_row));
      // Whole chunks per slab: each chunk is read (and its checksum checked) once.
      if (info.chunk_rows > 0) slab = std::max(slab / info.chunk_rows, hsize_t(1)) * info.chunk_rows;
      const bool whole = info.dims.empty() || rows == 0;
      for (hsize_t r0 = 0; r0 < rows || (whole && r0 == 0); r0 += slab) {
        const hssize_t n = whole ? -1 : hssize_t(std::min(slab, rows - r0));
        if (info.type == "float32") io::read_rows<float>(f, name, r0, n);
        else if (info.type == "float64") io::read_rows<double>(f, name, r0, n);
        else if (info.type == "int32") io::read_rows<std::int32_t>(f, name, r0, n);
        else if (info.type == "int64") io::read_rows<std::int64_t>(f, name, r0, n);
        else if (info.type == "uint64") io::read_rows<std::uint64_t>(f, name, r0, n);
        else if (info.type == "uint8") io::read_rows<std::uint8_t>(f, name, r0, n);
        else throw Error("dataset /" + name + " has unsupported type " + info.type);
        if (whole) break;
      }
    }
    return m;
  });
}

std::string inspect(const std::string& path) {
  return about(path, [&] {
    H5Handle f = io::open_file(path);
    const Meta m = read_meta_group(f);
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(path, ec);
    std::string gpus;
    for (std::size_t i = 0; i < m.gmis_per_gpu.size(); ++i) gpus += (i ? " " : "") + std::to_string(m.gmis_per_gpu[i]);
    std::string out = fmt::format(
        "checkpoint {}\n"
        "  format version {}, written by gmi_drl {} at {} ({:.1f} MiB)\n"
        "  run directory  {}\n"
        "  layout         {} node(s), {} GPU(s), {} GMI(s); GMIs per GPU: {}\n"
        "  counters       iteration {}, {} env steps, {} updates, {:.1f} s of training\n"
        "  reduction      {}\n"
        "  model          {} on {}, {} envs per GMI, obs dim {}, {} parameters, seed {}\n"
        "  datasets\n",
        path, m.format_version, m.gmi_drl_version, m.created, double(bytes) / (1 << 20), m.run_dir,
        m.num_nodes, m.num_gpus, m.num_gmis, gpus, m.iteration, m.env_steps, m.updates, m.wall_time_s,
        m.reducer.empty() ? "-" : m.reducer,
        m.algo, m.env, m.envs_per_gmi, m.obs_dim, m.num_params, m.seed);
    for (const std::string& name : io::list_datasets(f)) {
      const io::DatasetInfo info = io::dataset_info(f, name);
      std::string dims;
      for (std::size_t i = 0; i < info.dims.size(); ++i) dims += (i ? " x " : "") + std::to_string(info.dims[i]);
      out += fmt::format("    /{:<28} {:<8} [{}]\n", name, info.type, dims);
    }
    return out;
  });
}

}  // namespace gmi::checkpoint
