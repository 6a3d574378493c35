#include "kernels/core/gpu_monitor.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#if defined(GMI_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

namespace gmi {

SampleMean mean_since(const std::vector<GpuSample>& samples, GpuSample newest) {
  SampleMean m{0.0, 0, newest};
  for (const GpuSample& s : samples) {
    if (s.time_us <= newest.time_us) continue;
    m.util_pct += s.util_pct, ++m.counted;
    if (s.time_us > m.newest.time_us) m.newest = s;
  }
  if (m.counted > 0) m.util_pct /= m.counted;
  else m.util_pct = newest.time_us > 0 ? newest.util_pct : std::nan("");
  return m;
}

/// NVML's C API as its documentation (and nvml.h) gives it: the few calls used here, looked up in
/// the driver's library at run time.  The types below are the documented layouts.
struct GpuMonitor::Nvml {
  using Return = int;  // nvmlReturn_t: NVML_SUCCESS = 0, NVML_ERROR_NOT_FOUND = 6
  using Device = void*;
  struct Memory {
    unsigned long long total, free, used;
  };
  union Value {
    double d;
    int si;
    unsigned int ui;
    unsigned long ul;
    unsigned long long ull;
    long long sll;
    unsigned short us;
  };
  struct Sample {
    unsigned long long time_us;
    Value value;
  };
  static constexpr Return kSuccess = 0, kNotFound = 6;
  static constexpr int kGpuUtilisationSamples = 1;  // NVML_GPU_UTILIZATION_SAMPLES

  void* lib = nullptr;
  bool initialised = false;
  Device device = nullptr;
  Return (*init)() = nullptr;
  Return (*shutdown)() = nullptr;
  const char* (*error_string)(Return) = nullptr;
  Return (*by_pci_bus_id)(const char*, Device*) = nullptr;
  Return (*memory_info)(Device, Memory*) = nullptr;
  Return (*get_samples)(Device, int, unsigned long long, int*, unsigned int*, Sample*) = nullptr;

  template <class F>
  bool find(F& f, const char* name) {
    f = reinterpret_cast<F>(dlsym(lib, name));
    return f != nullptr;
  }
  std::string error(const char* call, Return r) const {
    return std::string(call) + " failed: " + (error_string ? error_string(r) : "error " + std::to_string(r));
  }
  ~Nvml() {
    if (initialised) shutdown();
    if (lib) dlclose(lib);
  }

  /// Opens NVML on the GPU at `pci_bus_id`; "" or why not.
  std::string open(const char* pci_bus_id) {
    lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return std::string("NVML not loaded: ") + dlerror();
    if (!find(init, "nvmlInit_v2") || !find(shutdown, "nvmlShutdown") || !find(error_string, "nvmlErrorString") ||
        !find(by_pci_bus_id, "nvmlDeviceGetHandleByPciBusId_v2") || !find(memory_info, "nvmlDeviceGetMemoryInfo") ||
        !find(get_samples, "nvmlDeviceGetSamples"))
      return "NVML lacks a function gmi_drl reads (driver too old?)";
    if (const Return r = init(); r != kSuccess) return error("nvmlInit", r);
    initialised = true;
    if (const Return r = by_pci_bus_id(pci_bus_id, &device); r != kSuccess)
      return error("nvmlDeviceGetHandleByPciBusId", r);
    return "";
  }

  /// The driver's utilisation samples newer than `after_us` (none is not an error).
  std::string samples(unsigned long long after_us, std::vector<GpuSample>& out) {
    out.clear();
    int type = 0;
    unsigned int count = 0;
    Return r = get_samples(device, kGpuUtilisationSamples, after_us, &type, &count, nullptr);
    if (r == kNotFound) return "";
    if (r != kSuccess) return error("nvmlDeviceGetSamples", r);
    std::vector<Sample> raw(std::max(1u, count));
    count = unsigned(raw.size());
    r = get_samples(device, kGpuUtilisationSamples, after_us, &type, &count, raw.data());
    if (r == kNotFound) return "";
    if (r != kSuccess) return error("nvmlDeviceGetSamples", r);
    for (unsigned int i = 0; i < count && i < raw.size(); ++i) {
      const Value& v = raw[i].value;
      const double pct = type == 0 ? v.d : type == 1 ? v.ui : type == 2 ? double(v.ul) : type == 3 ? double(v.ull)
                       : type == 4 ? double(v.sll) : type == 5 ? v.si : double(v.us);
      out.push_back({raw[i].time_us, pct});
    }
    return "";
  }
};

GpuMonitor::GpuMonitor(double period_s) {
#if defined(GMI_HAVE_CUDA)
  int device = 0;
  char bus_id[32] = {};
  if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device) != cudaSuccess) {
    why_not_ = "the CUDA device's PCI bus id is unknown";
    return;
  }
  nvml_ = std::make_unique<Nvml>();
  why_not_ = nvml_->open(bus_id);
  std::vector<GpuSample> samples;
  if (why_not_.empty()) why_not_ = nvml_->samples(0, samples);  // a GPU NVML cannot sample says so now
  available_ = why_not_.empty();
  if (!available_) {
    nvml_.reset();
    return;
  }
  newest_ = mean_since(samples, newest_).newest;
  thread_ = std::thread([this, period_s] { run(period_s); });
#else
  (void)period_s;
  why_not_ = "a host build has no GPU";
#endif
}

GpuMonitor::~GpuMonitor() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void GpuMonitor::run(double period_s) {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    lock.unlock();
    read_now();
    lock.lock();
    wake_.wait_for(lock, std::chrono::duration<double>(period_s), [this] { return stop_; });
  }
}

void GpuMonitor::read_now() {
  if (!available_) return;
  GpuSample after;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    after = newest_;
  }
  // The driver is read outside the lock (interval() never waits for it), into a buffer of this
  // call's own; the samples are counted under the lock against the newest one counted so far.
  std::vector<GpuSample> samples;
  const bool read = nvml_->samples(after.time_us, samples).empty();
  Nvml::Memory mem{};
  const bool mem_read = nvml_->memory_info(nvml_->device, &mem) == Nvml::kSuccess;
  std::lock_guard<std::mutex> lock(mutex_);
  if (read) {
    const SampleMean m = mean_since(samples, newest_);
    if (m.counted > 0) sum_ += m.util_pct * m.counted, count_ += m.counted;
    newest_ = m.newest;
  }
  if (mem_read) mem_mib_ = double(mem.used) / (1 << 20);
  read_failed_ = !read || !mem_read;  // a GPU lost: NaN, not the last figures again
}

void GpuMonitor::start() {
  std::lock_guard<std::mutex> lock(mutex_);
  sum_ = 0, count_ = 0;
}

GpuInterval GpuMonitor::interval(bool none_is_nan) {
  if (!available_) return {};
  std::lock_guard<std::mutex> lock(mutex_);
  GpuInterval g;
  if (read_failed_) return g;
  g.samples = count_;
  // No sample in the interval: the newest one, whose period covers it.
  g.util_pct = count_ > 0 ? sum_ / count_ : newest_.time_us > 0 && !none_is_nan ? newest_.util_pct : std::nan("");
  g.mem_mib = mem_mib_;
  sum_ = 0, count_ = 0;
  return g;
}

}  // namespace gmi
