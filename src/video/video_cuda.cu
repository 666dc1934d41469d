// The CUDA side of the video pipeline: the streams consecutive frames rotate
// through and the events that time each frame's GPU work and tell the encode
// thread when a frame's download is complete. The transfers and the
// operations themselves are queued by video.cpp through the public API
// (copy, Filter2D, HaarTransform, Matcher) on these streams.
#include <cuda_runtime.h>

#include <vector>

#include "core/cuda_resources.hpp"
#include "video/video_backends.hpp"

namespace pixelkit::detail {

namespace {

class VideoStreamsImpl final : public VideoStreams {
 public:
  VideoStreamsImpl(int lanes, int slots) {
    streams_.reserve(static_cast<std::size_t>(lanes));
    for (int i = 0; i < lanes; ++i) streams_.emplace_back();
    start_.reserve(static_cast<std::size_t>(slots));
    stop_.reserve(static_cast<std::size_t>(slots));
    done_.reserve(static_cast<std::size_t>(slots));
    for (int i = 0; i < slots; ++i) {
      start_.emplace_back(cudaEventDefault);
      stop_.emplace_back(cudaEventDefault);
      done_.emplace_back(cudaEventDisableTiming);
    }
  }
  ~VideoStreamsImpl() override { synchronize_all(); }

  stream_t stream(int lane) const override { return streams_.at(static_cast<std::size_t>(lane)).get(); }

  void mark_start(int slot, int lane) override {
    PIXELKIT_CUDA_TRY(cudaEventRecord(start_.at(static_cast<std::size_t>(slot)), stream(lane)));
  }
  void mark_stop(int slot, int lane) override {
    PIXELKIT_CUDA_TRY(cudaEventRecord(stop_.at(static_cast<std::size_t>(slot)), stream(lane)));
  }
  void mark_done(int slot, int lane) override {
    PIXELKIT_CUDA_TRY(cudaEventRecord(done_.at(static_cast<std::size_t>(slot)), stream(lane)));
  }

  double wait(int slot) override {
    const auto s = static_cast<std::size_t>(slot);
    PIXELKIT_CUDA_TRY(cudaEventSynchronize(done_.at(s)));
    // stop precedes done on the same stream, so both timing events are complete.
    float ms = 0.0f;
    PIXELKIT_CUDA_TRY(cudaEventElapsedTime(&ms, start_.at(s), stop_.at(s)));
    return ms;
  }

  void synchronize_all() noexcept override {
    for (const Stream& s : streams_)
      if (s.get()) (void)cudaStreamSynchronize(s.get());
    (void)cudaGetLastError();
  }

 private:
  std::vector<Stream> streams_;
  std::vector<Event> start_, stop_, done_;
};

}  // namespace

std::unique_ptr<VideoStreams> make_video_streams(int lanes, int slots) {
  return std::make_unique<VideoStreamsImpl>(lanes, slots);
}

}  // namespace pixelkit::detail
