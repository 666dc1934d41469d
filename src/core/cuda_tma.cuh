// The Tensor Memory Accelerator (sm_90 up): 2D tile loads from global to
// shared memory (cp.async.bulk.tensor) that complete on an mbarrier, and the
// mbarrier operations around them. Device code only; the tensor map that
// describes the global image is made on the host (core/cuda_tma.hpp) and
// reaches the kernel as a __grid_constant__ parameter.
//
// Used by bench_filter_access_gpu's TMA walk and by the streaming filter
// kernel's TMA ring of notes-filter-cuda.md run 22 (measured, not kept:
// docs/runs/2026-11-26-s16-tma-ring.patch). Protocol: one barrier per
// shared-memory stage, initialised with an arrival
// count of 1; the issuing thread arrives with the byte count it expects
// (tma_expect_tx) and issues the load; every consumer waits for the phase
// (mbar_wait, parity = how many times the stage was filled before, mod 2).
// A stage filled by threads instead arrives without bytes (mbar_arrive), so
// that its phase advances the same way.
#pragma once

#include <cuda.h>
#include <cstdint>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define PIXELKIT_TMA_ENABLED 1
#else
#define PIXELKIT_TMA_ENABLED 0
#endif

namespace pixelkit::detail::tma {

__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

/// Before the first use of barriers made by mbar_init (then a block barrier).
__device__ __forceinline__ void mbar_init(std::uint64_t* bar, unsigned count) {
#if PIXELKIT_TMA_ENABLED
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
#else
  (void)bar, (void)count;
#endif
}

/// Makes mbar_init's barriers visible to the async proxy (the TMA unit).
__device__ __forceinline__ void mbar_init_fence() {
#if PIXELKIT_TMA_ENABLED
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}

/// One arrival, no bytes (a stage that threads filled).
__device__ __forceinline__ void mbar_arrive(std::uint64_t* bar) {
#if PIXELKIT_TMA_ENABLED
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
#else
  (void)bar;
#endif
}

/// One arrival that also expects `bytes` of transfers to complete the phase.
__device__ __forceinline__ void tma_expect_tx(std::uint64_t* bar, unsigned bytes) {
#if PIXELKIT_TMA_ENABLED
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
#else
  (void)bar, (void)bytes;
#endif
}

/// Waits until the phase of parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(std::uint64_t* bar, unsigned parity) {
#if PIXELKIT_TMA_ENABLED
  asm volatile(
      "{\n .reg .pred p;\n PIXELKIT_MBAR_WAIT_%=:\n"
      " mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      " @!p bra PIXELKIT_MBAR_WAIT_%=;\n}" ::"r"(smem_u32(bar)),
      "r"(parity)
      : "memory");
#else
  (void)bar, (void)parity;
#endif
}

/// Orders this thread's earlier generic-proxy accesses of shared memory
/// before later async-proxy ones (a TMA write into a stage threads used).
__device__ __forceinline__ void fence_proxy_async() {
#if PIXELKIT_TMA_ENABLED
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

/// The box of `map` at element (x, y) into shared memory at `dst` (128-byte
/// aligned); completes `bar`'s transaction bytes. Elements beyond the
/// tensor's extent arrive as zeros. `map`: a const __grid_constant__
/// kernel parameter. The first byte of the box (x times the element size)
/// on a 16-byte boundary: boxes that started 4 or 12 bytes past one raised
/// an illegal instruction on an H100 (run 22).
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, int x, int y, std::uint64_t* bar) {
#if PIXELKIT_TMA_ENABLED
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
          smem_u32(dst)),
      "l"(map), "r"(x), "r"(y), "r"(smem_u32(bar))
      : "memory");
#else
  (void)dst, (void)map, (void)x, (void)y, (void)bar;
#endif
}

/// The box of `map` at element (x, y) from shared memory at `src`, as a bulk
/// group (tma_store_commit, tma_store_wait_read).
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, int x, int y, const void* src) {
#if PIXELKIT_TMA_ENABLED
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];" ::"l"(map), "r"(x),
               "r"(y), "r"(smem_u32(src))
               : "memory");
#else
  (void)map, (void)x, (void)y, (void)src;
#endif
}

__device__ __forceinline__ void tma_store_commit() {
#if PIXELKIT_TMA_ENABLED
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
#endif
}

/// Waits until at most PENDING of this thread's newest store groups still
/// read their shared memory.
template <int PENDING>
__device__ __forceinline__ void tma_store_wait_read() {
#if PIXELKIT_TMA_ENABLED
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(PENDING) : "memory");
#endif
}

/// Waits until every store group of this thread has completed.
__device__ __forceinline__ void tma_store_wait_all() {
#if PIXELKIT_TMA_ENABLED
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#endif
}

}  // namespace pixelkit::detail::tma
