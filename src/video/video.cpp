// VideoPipeline: one operation over every frame of a FrameSource.
//
// Three threads and a fixed pool of frame slots:
//   decode  (a thread)      free slot -> source.read() into the slot's input frame -> `decoded`
//   work    (the caller)    `decoded` -> the operation -> `done`
//   encode  (a thread)      `done` -> wait for the GPU, draw / render -> sink.write() -> free
// The queues hold slot pointers in rings sized to the pool, so nothing is
// allocated per frame; the pool bounds how far decoding runs ahead.
//
// On cuda every slot's host frames are pinned, and frame i goes through lane
// i % lanes: a stream with its own device buffers (and its own Filter2D /
// HaarTransform, whose device scratch must not be shared by work in flight on
// two streams). The work thread queues the upload of the next decoded frame
// before the operation of the current one, and the operation and download of
// frame i are queued without waiting, so the copy engines and the SMs work on
// consecutive frames at once; the encode thread waits on the frame's event.
// A Matcher call synchronises its stream (its results come back to the
// host), so one Matcher serves every lane and the template is prepared once.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "pixelkit/config.hpp"
#include "pixelkit/video.hpp"
#include "video/video_backends.hpp"

namespace pixelkit {

const char* to_string(VideoOp op) noexcept {
  switch (op) {
    case VideoOp::filter: return "filter";
    case VideoOp::haar_view: return "haar-view";
    case VideoOp::match: return "match";
  }
  return "?";
}

VideoOp parse_video_op(const std::string& text) {
  if (text == "filter") return VideoOp::filter;
  if (text == "haar-view") return VideoOp::haar_view;
  if (text == "match") return VideoOp::match;
  throw Error(Status::invalid_argument, "unknown video operation '" + text + "' (filter, haar-view or match)");
}

const char* to_string(VideoStop stop) noexcept {
  switch (stop) {
    case VideoStop::end: return "end";
    case VideoStop::interrupted: return "interrupted";
    case VideoStop::input_error: return "input_error";
  }
  return "?";
}

struct VideoPipeline::State {
  VideoOp op = VideoOp::filter;
  Kernel kernel;
  Border border;
  int levels = 0;
  HaarNormalize normalize = HaarNormalize::orthonormal;
  std::unique_ptr<Matcher> matcher;
};

VideoPipeline::VideoPipeline(std::unique_ptr<State> state) : state_(std::move(state)) {}
VideoPipeline::~VideoPipeline() = default;
VideoPipeline::VideoPipeline(VideoPipeline&&) noexcept = default;
VideoPipeline& VideoPipeline::operator=(VideoPipeline&&) noexcept = default;

VideoPipeline VideoPipeline::filter(const Kernel& kernel, const Border& border) {
  PIXELKIT_EXPECTS(kernel.width >= 1 && kernel.height >= 1 && kernel.width % 2 == 1 && kernel.height % 2 == 1 &&
                       kernel.width <= Kernel::kMaxSide && kernel.height <= Kernel::kMaxSide &&
                       kernel.coeffs.size() == static_cast<std::size_t>(kernel.width) * kernel.height,
                   Status::invalid_argument, "video filter: the kernel's sides must be odd, 1.." +
                                                 std::to_string(Kernel::kMaxSide) + ", with width * height coefficients");
  auto s = std::make_unique<State>();
  s->op = VideoOp::filter;
  s->kernel = kernel;
  s->border = border;
  return VideoPipeline(std::move(s));
}

VideoPipeline VideoPipeline::haar_view(int levels, HaarNormalize normalize) {
  PIXELKIT_EXPECTS(levels >= 0, Status::invalid_argument,
                   "haar-view: " + std::to_string(levels) + " levels; give 1 or more (0 = the frame's maximum)");
  auto s = std::make_unique<State>();
  s->op = VideoOp::haar_view;
  s->levels = levels;
  s->normalize = normalize;
  return VideoPipeline(std::move(s));
}

VideoPipeline VideoPipeline::match(const ConstImageView& templ, const MatchParams& params, const ConstImageView& mask) {
  PIXELKIT_EXPECTS(templ.type == PixelType::u8, Status::invalid_argument,
                   "video match: the template is " + std::string(to_string(templ.type)) +
                       "; video frames are u8, so the template must be u8 too");
  auto s = std::make_unique<State>();
  s->op = VideoOp::match;
  s->matcher = std::make_unique<Matcher>(templ, params, mask);
  return VideoPipeline(std::move(s));
}

VideoOp VideoPipeline::op() const noexcept { return state_->op; }

namespace {
int resolved_levels(int levels, const VideoFormat& f) {
  return levels > 0 ? levels : haar_max_levels(f.width, f.height);
}
std::string frame_shape(const VideoFormat& f) {
  return std::to_string(f.width) + "x" + std::to_string(f.height) + "x" + std::to_string(f.channels);
}
}  // namespace

VideoFormat VideoPipeline::output_format(const VideoFormat& in) const {
  PIXELKIT_EXPECTS(in.width >= 1 && in.height >= 1 && (in.channels == 1 || in.channels == 3 || in.channels == 4),
                   Status::invalid_argument,
                   "video: frames must have a positive size and 1, 3 or 4 channels, not " + frame_shape(in));
  VideoFormat out = in;
  switch (state_->op) {
    case VideoOp::filter:
      break;
    case VideoOp::haar_view:
      try {
        (void)haar_layout(in.width, in.height, resolved_levels(state_->levels, in));
      } catch (const Error& e) {
        throw Error(e.status(), "haar-view on " + std::to_string(in.width) + "x" + std::to_string(in.height) +
                                    " frames: " + e.what());
      }
      break;
    case VideoOp::match: {
      const Matcher& m = *state_->matcher;
      PIXELKIT_EXPECTS(in.channels == 1 || in.channels == 3, Status::invalid_argument,
                       "match takes frames of 1 or 3 channels; these frames have " + std::to_string(in.channels));
      PIXELKIT_EXPECTS(m.channels() == in.channels, Status::invalid_argument,
                       "the template has " + std::to_string(m.channels()) + " channel" +
                           (m.channels() == 1 ? "" : "s") + " but the frames have " + std::to_string(in.channels));
      PIXELKIT_EXPECTS(m.template_width() <= in.width && m.template_height() <= in.height, Status::invalid_argument,
                       "the template (" + std::to_string(m.template_width()) + "x" +
                           std::to_string(m.template_height()) + ") is larger than the frames (" +
                           std::to_string(in.width) + "x" + std::to_string(in.height) + ")");
      PIXELKIT_EXPECTS(!m.params().color_check || in.channels == 3, Status::invalid_argument,
                       "the colour check needs colour (3-channel) frames; these frames are grey");
      out.channels = 3;
      break;
    }
  }
  return out;
}

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct Slot {
  int id = 0;
  Image in;      // the decoded frame (pinned on cuda)
  Image out;     // filter / haar-view: the result; match on grey frames: the RGB copy
  Image coeffs;  // haar-view: the coefficients (pinned on cuda)
  std::int64_t index = 0;
  double timestamp_ms = 0;
  bool uploaded = false;
  std::vector<Match> matches;
};

// A FIFO of slot pointers in a ring as large as the pool (never more in it).
class SlotQueue {
 public:
  explicit SlotQueue(std::size_t capacity) : ring_(capacity) {}
  void push(Slot* s) {
    {
      std::lock_guard<std::mutex> l(m_);
      if (size_ == ring_.size()) throw Error(Status::internal, "video: a slot queue overflowed");
      ring_[(head_ + size_) % ring_.size()] = s;
      ++size_;
    }
    cv_.notify_one();
  }
  /// Blocks for the next slot; nullptr once closed and empty.
  Slot* pop() {
    std::unique_lock<std::mutex> l(m_);
    cv_.wait(l, [&] { return size_ > 0 || closed_; });
    return take();
  }
  Slot* try_pop() {
    std::lock_guard<std::mutex> l(m_);
    return take();
  }
  void close() {
    {
      std::lock_guard<std::mutex> l(m_);
      closed_ = true;
    }
    cv_.notify_all();
  }

 private:
  Slot* take() {
    if (size_ == 0) return nullptr;
    Slot* s = ring_[head_];
    head_ = (head_ + 1) % ring_.size();
    --size_;
    return s;
  }
  std::mutex m_;
  std::condition_variable cv_;
  std::vector<Slot*> ring_;
  std::size_t head_ = 0, size_ = 0;
  bool closed_ = false;
};

// What one lane (a stream on cuda; the only lane on host backends) owns.
struct Lane {
  Image d_in, d_out, d_coeffs;
  std::unique_ptr<Filter2D> filter;
  std::unique_ptr<HaarTransform> haar;
};

}  // namespace

VideoSummary VideoPipeline::run(FrameSource& source, FrameSink* sink, const VideoRunOptions& ro) {
  const Clock::time_point t_start = Clock::now();
  State& st = *state_;
  const VideoFormat in = source.format();
  const VideoFormat out = output_format(in);
  PIXELKIT_EXPECTS(ro.frames_in_flight == 0 || (ro.frames_in_flight >= 2 && ro.frames_in_flight <= 64),
                   Status::invalid_argument,
                   "video: frames_in_flight " + std::to_string(ro.frames_in_flight) + " is outside 2..64 (0 = default)");
  PIXELKIT_EXPECTS(ro.streams >= 0 && ro.streams <= 4, Status::invalid_argument,
                   "video: streams " + std::to_string(ro.streams) + " is outside 1..4 (0 = default)");
  PIXELKIT_EXPECTS(ro.max_frames >= -1, Status::invalid_argument, "video: max_frames must be -1 (all) or more");
  PIXELKIT_EXPECTS(in.fps > 0, Status::invalid_argument, "video: the source's frame rate must be positive");

  const Backend backend = resolve_backend(ro.options.backend, Memory::host);
  const bool gpu = backend == Backend::cuda;
  const int nlanes = gpu ? (ro.streams > 0 ? ro.streams : 3) : 1;
  const int nslots = ro.frames_in_flight > 0 ? ro.frames_in_flight : (gpu ? 6 : 4);
  const Memory hmem = gpu ? Memory::pinned : Memory::host;
  const int levels = st.op == VideoOp::haar_view ? resolved_levels(st.levels, in) : 0;
  HaarLayout layout;
  if (st.op == VideoOp::haar_view) layout = haar_layout(in.width, in.height, levels);
  const int top_k = st.matcher ? st.matcher->params().top_k : 0;

  // ---- everything allocated before the first frame ----
  std::vector<Slot> slots(static_cast<std::size_t>(nslots));
  for (int i = 0; i < nslots; ++i) {
    Slot& s = slots[static_cast<std::size_t>(i)];
    s.id = i;
    s.in = Image(in.width, in.height, in.channels, PixelType::u8, hmem);
    if (st.op != VideoOp::match || in.channels != 3)
      s.out = Image(out.width, out.height, out.channels, PixelType::u8, st.op == VideoOp::match ? Memory::host : hmem);
    if (st.op == VideoOp::haar_view)
      s.coeffs = Image(layout.coeff_width, layout.coeff_height, in.channels, PixelType::f32, hmem);
    s.matches.reserve(static_cast<std::size_t>(top_k));
  }
  std::vector<Lane> lanes(static_cast<std::size_t>(nlanes));
  for (Lane& l : lanes) {
    if (st.op == VideoOp::filter) l.filter = std::make_unique<Filter2D>(st.kernel, st.border);
    if (st.op == VideoOp::haar_view) l.haar = std::make_unique<HaarTransform>(levels, st.normalize);
    if (gpu) {
      l.d_in = Image(in.width, in.height, in.channels, PixelType::u8, Memory::device);
      if (st.op == VideoOp::filter) l.d_out = Image(in.width, in.height, in.channels, PixelType::u8, Memory::device);
      if (st.op == VideoOp::haar_view)
        l.d_coeffs = Image(layout.coeff_width, layout.coeff_height, in.channels, PixelType::f32, Memory::device);
    }
  }
  std::unique_ptr<detail::VideoStreams> streams;
  if (gpu) {
#if PIXELKIT_WITH_CUDA
    streams = detail::make_video_streams(nlanes, nslots);
#else
    throw Error(Status::internal, "video: cuda resolved in a build without CUDA");
#endif
  }
  Options base = ro.options;
  base.backend = backend;
  base.info = nullptr;
  // The decode and encode threads need cores of their own: an OpenMP team
  // that spans every core waits at each barrier for members the scheduler
  // has parked behind them (measured: 12 ms instead of 0.1 ms per small frame).
  if (base.threads == 0) base.threads = std::max(1, resolve_threads(0) - 2);
  if (st.matcher) {
    Options r = base;
    if (gpu) r.stream = streams->stream(0);
    st.matcher->reserve(in.width, in.height, r);
    if (gpu) synchronize(r.stream);
  }

  // ---- the run ----
  SlotQueue free_q(static_cast<std::size_t>(nslots)), decoded_q(static_cast<std::size_t>(nslots)),
      done_q(static_cast<std::size_t>(nslots));
  for (Slot& s : slots) free_q.push(&s);

  std::mutex error_m;
  std::exception_ptr first_error;
  std::atomic<bool> failed{false};
  const auto fail = [&](std::exception_ptr e) {
    {
      std::lock_guard<std::mutex> l(error_m);
      if (!first_error) first_error = e;
    }
    failed = true;
    free_q.close();
    decoded_q.close();
    done_q.close();
  };
  const auto user_stop = [&] { return ro.stop != nullptr && ro.stop->load(std::memory_order_relaxed); };

  std::atomic<bool> interrupted{false};
  bool input_error = false;
  Status input_status = Status::io;
  std::string input_message;
  double decode_ms = 0, op_host_ms = 0, op_gpu_ms = 0, post_ms = 0, encode_ms = 0;
  std::int64_t written = 0;
  RunInfo first_info;

  // decode
  const auto decode = [&] {
    try {
      std::int64_t n = 0;
      for (;;) {
        if (failed) break;
        if (user_stop()) {
          interrupted = true;
          break;
        }
        if (ro.max_frames >= 0 && n >= ro.max_frames) break;
        Slot* s = free_q.pop();
        if (!s || failed) break;
        if (user_stop()) {
          interrupted = true;
          free_q.push(s);
          break;
        }
        const Clock::time_point t = Clock::now();
        bool ok = false;
        try {
          ok = source.read(s->in.view());
        } catch (const Error& e) {
          input_error = true;
          input_status = e.status();
          input_message = e.what();
        }
        decode_ms += ms_since(t);
        if (!ok) {
          free_q.push(s);
          break;
        }
        s->index = n;
        s->timestamp_ms = static_cast<double>(n) * 1000.0 / in.fps;
        s->uploaded = false;
        ++n;
        decoded_q.push(s);
      }
    } catch (...) {
      fail(std::current_exception());
    }
    decoded_q.close();
  };

  // encode
  const auto encode = [&] {
    try {
      detail::HaarViewScratch scratch;
      FrameRecord rec;
      rec.matches.reserve(static_cast<std::size_t>(top_k));
      while (Slot* s = done_q.pop()) {
        if (failed) break;
        if (gpu) op_gpu_ms += streams->wait(s->id);
        const Clock::time_point tp = Clock::now();
        ConstImageView result;
        switch (st.op) {
          case VideoOp::filter:
            result = s->out.cview();
            break;
          case VideoOp::haar_view:
            detail::render_haar_view(s->coeffs.cview(), layout, s->out.view(), scratch);
            result = s->out.cview();
            break;
          case VideoOp::match: {
            ImageView target = in.channels == 3 ? s->in.view() : s->out.view();
            if (in.channels == 1) detail::grey_to_rgb(s->in.cview(), target);
            detail::draw_matches(target, s->matches, st.matcher->template_width(), st.matcher->template_height());
            result = target;
            break;
          }
        }
        post_ms += ms_since(tp);
        if (sink) {
          const Clock::time_point te = Clock::now();
          sink->write(result);
          encode_ms += ms_since(te);
        }
        ++written;
        rec.index = s->index;
        rec.timestamp_ms = s->timestamp_ms;
        rec.matches.assign(s->matches.begin(), s->matches.end());
        if (ro.on_frame) ro.on_frame(rec);
        if (ro.on_progress) ro.on_progress(VideoProgress{written, in.frame_count, ms_since(t_start)});
        free_q.push(s);
      }
    } catch (...) {
      fail(std::current_exception());
    }
  };

  // work (this thread)
  const auto upload = [&](Slot* s) {
    const int lane = static_cast<int>(s->index % nlanes);
    copy(s->in.cview(), lanes[static_cast<std::size_t>(lane)].d_in.view(), streams->stream(lane));
    s->uploaded = true;
  };
  bool first = true;
  const auto process = [&](Slot* s) {
    Options o = base;
    if (first) o.info = &first_info;
    first = false;
    if (!gpu) {
      Lane& l = lanes[0];
      const Clock::time_point t = Clock::now();
      switch (st.op) {
        case VideoOp::filter: (*l.filter)(s->in.cview(), s->out.view(), o); break;
        case VideoOp::haar_view: l.haar->forward(s->in.cview(), s->coeffs.view(), o); break;
        case VideoOp::match: {
          const MatchResult r = (*st.matcher)(s->in.cview(), o);
          s->matches.assign(r.matches.begin(), r.matches.end());
          break;
        }
      }
      op_host_ms += ms_since(t);
      return;
    }
    const int lane = static_cast<int>(s->index % nlanes);
    Lane& l = lanes[static_cast<std::size_t>(lane)];
    o.stream = streams->stream(lane);
    if (!s->uploaded) upload(s);
    streams->mark_start(s->id, lane);
    switch (st.op) {
      case VideoOp::filter:
        (*l.filter)(l.d_in.cview(), l.d_out.view(), o);
        streams->mark_stop(s->id, lane);
        copy(l.d_out.cview(), s->out.view(), o.stream);
        break;
      case VideoOp::haar_view:
        l.haar->forward(l.d_in.cview(), l.d_coeffs.view(), o);
        streams->mark_stop(s->id, lane);
        copy(l.d_coeffs.cview(), s->coeffs.view(), o.stream);
        break;
      case VideoOp::match: {
        const MatchResult r = (*st.matcher)(l.d_in.cview(), o);
        streams->mark_stop(s->id, lane);
        s->matches.assign(r.matches.begin(), r.matches.end());
        break;
      }
    }
    streams->mark_done(s->id, lane);
  };

  std::thread decoder, encoder;
  try {
    decoder = std::thread(decode);
    encoder = std::thread(encode);
  } catch (...) {
    fail(std::current_exception());
  }
  if (!failed) {
    Slot* cur = nullptr;
    try {
      cur = decoded_q.pop();
      while (cur && !failed) {
        if (user_stop()) {
          interrupted = true;
          break;
        }
        // Queue the next frame's upload (on the next lane) before this frame's
        // work, so that the transfer overlaps it (a Matcher call blocks until
        // its results are in). With one lane the upload would overwrite the
        // device frame this frame's work is queued to read.
        Slot* next = gpu && nlanes > 1 ? decoded_q.try_pop() : nullptr;
        if (next) upload(next);
        process(cur);
        done_q.push(cur);
        cur = next ? next : decoded_q.pop();
      }
    } catch (...) {
      fail(std::current_exception());
    }
    if (cur && !failed) {
      // Interrupted: frames decoded but not processed are dropped. An upload
      // may still read their pinned buffers, so let the streams drain before
      // the decoder can get them back.
      if (gpu) streams->synchronize_all();
      free_q.push(cur);
      while (Slot* s = decoded_q.pop()) free_q.push(s);
    }
  }
  done_q.close();
  if (encoder.joinable()) encoder.join();
  free_q.close();  // the decoder may wait for a slot that nobody returns now
  if (decoder.joinable()) decoder.join();

  if (first_error) {
    if (streams) streams->synchronize_all();
    if (sink) sink->abort();
    std::rethrow_exception(first_error);
  }

  VideoSummary sum;
  sum.frames = written;
  sum.backend = first_info.backend == Backend::automatic ? backend : first_info.backend;
  sum.path = first_info.path;
  if (ro.options.info) *ro.options.info = first_info;
  if (input_error) {
    sum.stop = VideoStop::input_error;
    sum.input_status = input_status;
    sum.message = input_message;
  } else if (interrupted) {
    sum.stop = VideoStop::interrupted;
  }
  if (sink) {
    if (written > 0) {
      const Clock::time_point te = Clock::now();
      sink->finish();
      encode_ms += ms_since(te);
      sum.output_written = true;
    } else {
      sink->abort();
    }
  }
  sum.decode_ms = decode_ms;
  sum.op_ms = gpu ? op_gpu_ms : op_host_ms;
  sum.post_ms = post_ms;
  sum.encode_ms = encode_ms;
  sum.wall_ms = ms_since(t_start);
  return sum;
}

}  // namespace pixelkit
