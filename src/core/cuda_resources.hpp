// RAII owners for CUDA resources: device and pinned buffers that only grow,
// streams and events. Move-only; destructors never throw.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include <cuda_runtime.h>

#include "core/cuda_check.hpp"

namespace pixelkit::detail {

/// Device memory that is reallocated only when a larger size is asked for.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) { reserve(bytes); }
  ~DeviceBuffer() { if (ptr_) cudaFree(ptr_); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept { std::swap(ptr_, o.ptr_); std::swap(size_, o.size_); return *this; }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  /// Ensures at least `bytes` are allocated (contents are not kept on growth).
  /// A new allocation is zeroed once: buffers hold pitched rows whose padding
  /// nothing writes, and a kernel that copies a row's last partial 16 bytes
  /// by a clipped cp.async (the row-streaming 3x3 filter) reads only the
  /// row's bytes, but compute-sanitizer's initcheck counts the instruction's
  /// whole 16 and would report the padding as uninitialised. On the calling
  /// thread's default stream (cudaStreamPerThread), then synchronised: the
  /// caller's streams do not wait for it, and, unlike the legacy default
  /// stream, it does not wait for other threads' blocking streams either.
  void reserve(std::size_t bytes) {
    if (bytes <= size_) return;
    if (ptr_) { cudaFree(ptr_); ptr_ = nullptr; size_ = 0; }
    cudaError_t e = cudaMalloc(&ptr_, bytes);
    if (e != cudaSuccess) {
      ptr_ = nullptr;
      throw_cuda(e, ("cudaMalloc of " + std::to_string(bytes) + " bytes").c_str(), __FILE__, __LINE__);
    }
    e = cudaMemsetAsync(ptr_, 0, bytes, cudaStreamPerThread);
    if (e == cudaSuccess) e = cudaStreamSynchronize(cudaStreamPerThread);
    if (e != cudaSuccess) {
      cudaFree(ptr_);
      ptr_ = nullptr;
      throw_cuda(e, ("zeroing a new device buffer of " + std::to_string(bytes) + " bytes").c_str(), __FILE__, __LINE__);
    }
    size_ = bytes;
  }
  void* get() const noexcept { return ptr_; }
  template <typename T> T* as() const noexcept { return static_cast<T*>(ptr_); }
  std::size_t size() const noexcept { return size_; }

 private:
  void* ptr_ = nullptr;
  std::size_t size_ = 0;
};

/// Page-locked host memory, grow-only like DeviceBuffer.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer() { if (ptr_) cudaFreeHost(ptr_); }
  PinnedBuffer(PinnedBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept { std::swap(ptr_, o.ptr_); std::swap(size_, o.size_); return *this; }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void reserve(std::size_t bytes) {
    if (bytes <= size_) return;
    if (ptr_) { cudaFreeHost(ptr_); ptr_ = nullptr; size_ = 0; }
    const cudaError_t e = cudaMallocHost(&ptr_, bytes);
    if (e != cudaSuccess) {
      ptr_ = nullptr;
      throw_cuda(e, ("cudaMallocHost of " + std::to_string(bytes) + " bytes").c_str(), __FILE__, __LINE__);
    }
    size_ = bytes;
  }
  void* get() const noexcept { return ptr_; }
  template <typename T> T* as() const noexcept { return static_cast<T*>(ptr_); }
  std::size_t size() const noexcept { return size_; }

 private:
  void* ptr_ = nullptr;
  std::size_t size_ = 0;
};

class Stream {
 public:
  Stream() { PIXELKIT_CUDA_TRY(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() { if (s_) cudaStreamDestroy(s_); }
  Stream(Stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Stream& operator=(Stream&& o) noexcept { std::swap(s_, o.s_); return *this; }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const noexcept { return s_; }
  operator cudaStream_t() const noexcept { return s_; }  // NOLINT

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  explicit Event(unsigned flags = cudaEventDisableTiming) { PIXELKIT_CUDA_TRY(cudaEventCreateWithFlags(&e_, flags)); }
  ~Event() { if (e_) cudaEventDestroy(e_); }
  Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  Event& operator=(Event&& o) noexcept { std::swap(e_, o.e_); return *this; }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const noexcept { return e_; }
  operator cudaEvent_t() const noexcept { return e_; }  // NOLINT

 private:
  cudaEvent_t e_ = nullptr;
};

}  // namespace pixelkit::detail
