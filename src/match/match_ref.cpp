// Template matching, the ref backend: the definition in plain loops. Every
// window, every template pixel, every channel; sums in f64 (exact for u8:
// every partial sum is an integer far below 2^53), then the shared formula.
#include "match/match_backends.hpp"

namespace pixelkit::detail {

namespace {

template <typename T>
void match_ref_typed(const ConstImageView& image, const PreparedTemplate& t, const ImageView& scores) {
  const TemplateStats& st = t.stats;
  const int w = st.width, h = st.height, C = st.channels;
  const ConstImageView templ = t.templ.cview();
  const bool masked = st.masked;
  const ConstImageView mask = t.mask.cview();
  for (int y = 0; y < scores.height; ++y) {
    float* out = scores.row<float>(y);
    for (int x = 0; x < scores.width; ++x) {
      double X = 0;
      double S1[kMaxMatchChannels] = {}, S2[kMaxMatchChannels] = {};
      for (int j = 0; j < h; ++j) {
        const T* irow = image.row<T>(y + j) + static_cast<std::ptrdiff_t>(x) * C;
        const T* trow = templ.row<T>(j);
        const std::uint8_t* mrow = masked ? mask.row<std::uint8_t>(j) : nullptr;
        for (int i = 0; i < w * C; ++i) {
          if (masked && mrow[i] == 0) continue;
          const double iv = static_cast<double>(irow[i]);
          const double tv = static_cast<double>(trow[i]);
          const int c = i % C;
          X += tv * iv;
          S1[c] += iv;
          S2[c] += iv * iv;
        }
      }
      out[x] = match_score(t.method, st, X, S1, S2);
    }
  }
}

}  // namespace

void match_ref(const ConstImageView& image, const PreparedTemplate& t, const ImageView& scores) {
  if (image.type == PixelType::u8)
    match_ref_typed<std::uint8_t>(image, t, scores);
  else
    match_ref_typed<float>(image, t, scores);
}

}  // namespace pixelkit::detail
