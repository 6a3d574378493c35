#pragma once
/// \file
/// \brief How busy a GPU is and how much of its memory is in use, from NVML (the driver's
/// management library, what `nvidia-smi` reads): the papers' central figure for GMIs (000 Fig. 1b,
/// 003 Figs. 1-3).  NVML is loaded at run time (`libnvidia-ml.so.1`, installed with the driver), so
/// that a build needs neither its header nor its library and a process without it runs on with
/// the figures NaN.  A thread of the monitor's own reads the driver, so training never waits on
/// it.  Sampled by training (metrics.csv's gpu_util_pct, gpu_mem_mib), bench and tune.
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gmi {

/// One of the driver's utilisation samples: when (microseconds) and the percent of its sample
/// period during which one or more kernels ran on the GPU.
struct GpuSample {
  std::uint64_t time_us = 0;
  double util_pct = 0;
};

/// What a GPU did over an interval.  NaN where it is not known.
struct GpuInterval {
  double util_pct = std::numeric_limits<double>::quiet_NaN();  ///< mean of the driver's samples in the interval
  /// memory in use on the whole GPU (every process) at its end
  double mem_mib = std::numeric_limits<double>::quiet_NaN();
  int samples = 0;  ///< how many of the driver's samples the mean holds
};

/// The samples of one interval, reduced.
struct SampleMean {
  double util_pct;  ///< NaN when there is no sample at all
  int counted = 0;  ///< samples newer than the interval's start
  GpuSample newest;  ///< the newest sample seen so far
};

/// The mean utilisation of the samples newer than `newest.time_us` (the newest one seen before).
/// With none newer (an interval shorter than the driver's sample period, 1/6 to 1 s), the value
/// of `newest`, whose period covers the interval; NaN when no sample was ever seen (time 0).
SampleMean mean_since(const std::vector<GpuSample>& samples, GpuSample newest);

class GpuMonitor {
 public:
  /// The GPU this process computes on (the current CUDA device, found in NVML by its PCI bus id),
  /// read by a thread of its own every `period_s` (a reading costs about 1.4 ms on an H100, too
  /// much for a training thread).  Never throws: on a host build, without NVML or on a GPU NVML
  /// cannot sample (a MIG instance), available() is false and why_not() says why (it throws only
  /// what allocating and starting a thread may).
  explicit GpuMonitor(double period_s = 0.1);
  ~GpuMonitor();  ///< stops the thread
  GpuMonitor(const GpuMonitor&) = delete;
  GpuMonitor& operator=(const GpuMonitor&) = delete;

  bool available() const { return available_; }
  const std::string& why_not() const { return why_not_; }
  /// Starts an interval: what was read before is dropped.
  void start();
  /// The interval since start() or the last interval(), and starts the next one; never waits for
  /// the driver.  An interval that holds no sample (shorter than the driver's sample period, about
  /// 0.19 s on an H100) gets the newest earlier sample's value, or with `none_is_nan` NaN: a series
  /// of training iterations wants the former, one timed window (bench) the latter.
  GpuInterval interval(bool none_is_nan = false);
  /// Reads the driver now (the thread does this every period; bench calls it at a window's ends).
  /// Thread-safe: readings that overlap count each sample once.
  void read_now();

 private:
  struct Nvml;
  void run(double period_s);
  std::unique_ptr<Nvml> nvml_;
  bool available_ = false;
  std::string why_not_;
  std::mutex mutex_;  // guards what follows
  std::condition_variable wake_;
  bool stop_ = false;
  double sum_ = 0;  ///< of the samples since the interval started
  int count_ = 0;
  GpuSample newest_{};
  double mem_mib_ = std::numeric_limits<double>::quiet_NaN();
  bool read_failed_ = false;  ///< the last reading of the driver failed: the figures are NaN until one works
  std::thread thread_;
};

}  // namespace gmi
