// The HTML report's roofline as a browser draws it: headless Chromium renders the report of a
// trace with counters to a PNG, and the test looks for each kernel's point (its red) where the
// SVG says it is, relative to the plot area (its unique background colour), and for the axis
// labels in the rendered DOM. A script added to a copy of the page measures every label's box as
// laid out in the browser: no two labels overlap, none covers a point, none leaves the plot (roof,
// slope and point labels) or the SVG (ticks and axis titles). Skips, saying so, when no Chromium
// is installed (scripts/deps.sh installs Debian's chromium-headless-shell; CI has it).
// KTUNE_KEEP_SCREENSHOT=DIR keeps the screenshots there.
#include <gtest/gtest.h>
#include <zlib.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>

#include "counter_samples.hpp"
#include "ktune/report/report.hpp"

namespace ktune::report {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> find_chromium() {
  if (const char* e = std::getenv("KTUNE_CHROMIUM"); e && *e) return std::string(e);
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin");
  for (std::string dir; std::getline(dirs, dir, ':');)
    for (const char* name :
         {"chromium-headless-shell", "chromium", "chrome-headless-shell", "google-chrome"})
      if (fs::exists(fs::path(dir) / name)) return (fs::path(dir) / name).string();
  return std::nullopt;
}

std::string run(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (!p) return out;
  std::array<char, 4096> buf;
  for (std::size_t n; (n = fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
  pclose(p);
  return out;
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// An 8-bit RGB or RGBA, non-interlaced PNG (what Chromium writes), decoded to RGB.
struct Image {
  int width = 0, height = 0;
  std::vector<std::array<std::uint8_t, 3>> pixels;
  const std::array<std::uint8_t, 3>& at(int x, int y) const { return pixels[y * width + x]; }
};

std::uint32_t be32(const std::string& s, std::size_t at) {
  return (std::uint32_t(std::uint8_t(s[at])) << 24) |
         (std::uint32_t(std::uint8_t(s[at + 1])) << 16) |
         (std::uint32_t(std::uint8_t(s[at + 2])) << 8) | std::uint32_t(std::uint8_t(s[at + 3]));
}

std::optional<Image> decode_png(const std::string& png) {
  if (png.size() < 33 || png.compare(1, 3, "PNG") != 0) return std::nullopt;
  Image img;
  int channels = 0;
  std::string idat;
  for (std::size_t at = 8; at + 8 <= png.size();) {
    const std::uint32_t length = be32(png, at);
    const std::string type = png.substr(at + 4, 4);
    if (type == "IHDR") {
      img.width = int(be32(png, at + 8));
      img.height = int(be32(png, at + 12));
      const int depth = std::uint8_t(png[at + 16]), color = std::uint8_t(png[at + 17]);
      if (depth != 8 || (color != 2 && color != 6) || png[at + 20] != 0) return std::nullopt;
      channels = color == 2 ? 3 : 4;
    } else if (type == "IDAT") {
      idat += png.substr(at + 8, length);
    }
    at += 12 + length;
  }
  const std::size_t stride = std::size_t(img.width) * channels;
  std::vector<std::uint8_t> raw((stride + 1) * img.height);
  uLongf raw_size = raw.size();
  if (channels == 0 || uncompress(raw.data(), &raw_size,
                                  reinterpret_cast<const Bytef*>(idat.data()), idat.size()) != Z_OK)
    return std::nullopt;
  std::vector<std::uint8_t> prev(stride, 0), cur(stride);
  img.pixels.resize(std::size_t(img.width) * img.height);
  for (int y = 0; y < img.height; ++y) {
    const std::uint8_t filter = raw[y * (stride + 1)];
    const std::uint8_t* line = &raw[y * (stride + 1) + 1];
    for (std::size_t i = 0; i < stride; ++i) {
      const int a = i >= std::size_t(channels) ? cur[i - channels] : 0, b = prev[i],
                c = i >= std::size_t(channels) ? prev[i - channels] : 0;
      int predictor = 0;
      switch (filter) {
        case 1:
          predictor = a;
          break;
        case 2:
          predictor = b;
          break;
        case 3:
          predictor = (a + b) / 2;
          break;
        case 4: {
          const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
          predictor = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
          break;
        }
        default:
          break;
      }
      cur[i] = std::uint8_t(line[i] + predictor);
    }
    for (int x = 0; x < img.width; ++x)
      img.pixels[std::size_t(y) * img.width + x] = {cur[x * channels], cur[x * channels + 1],
                                                    cur[x * channels + 2]};
    prev.swap(cur);
  }
  return img;
}

bool near_colour(const std::array<std::uint8_t, 3>& p, std::array<int, 3> c, int tolerance) {
  for (int i = 0; i < 3; ++i)
    if (std::abs(int(p[i]) - c[i]) > tolerance) return false;
  return true;
}

const char* const kChromeFlags =
    " --headless --no-sandbox --disable-gpu --hide-scrollbars "
    "--force-device-scale-factor=1 --window-size=1600,1200 ";

// Appended to a copy of the page: the labels' boxes as laid out, checked in the browser, and the
// verdict written into the DOM ("LAYOUT labels=N: ok" or each problem).
const char* const kMeasureScript = R"(<script>
const svg = document.querySelector('svg.roofline');
const frame = svg.getBoundingClientRect();
const plot = svg.querySelector('rect').getBoundingClientRect();
const box = e => e.getBoundingClientRect();
const placed = [...svg.querySelectorAll('text.roof-label, text.slope-label, text.point-label')];
const points = [...svg.querySelectorAll('circle.kernel')];
const overlap = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 &&
                          a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
const within = (a, f) => a.left >= f.left - 0.5 && a.right <= f.right + 0.5 &&
                         a.top >= f.top - 0.5 && a.bottom <= f.bottom + 0.5;
const problems = [];
for (const t of placed) if (!within(box(t), plot)) problems.push('outside the plot: ' + t.textContent);
for (const t of svg.querySelectorAll('text'))
  if (!within(box(t), frame)) problems.push('clipped: ' + t.textContent);
for (let i = 0; i < placed.length; ++i) {
  for (let j = i + 1; j < placed.length; ++j)
    if (overlap(box(placed[i]), box(placed[j])))
      problems.push('overlap: ' + placed[i].textContent + ' / ' + placed[j].textContent);
  for (const p of points)
    if (overlap(box(placed[i]), box(p))) problems.push('covers a point: ' + placed[i].textContent);
}
const out = document.createElement('pre');
out.textContent = 'LAYOUT labels=' + placed.length + ' points=' + points.length + ': ' +
                  (problems.length ? problems.join(' | ') : 'ok') + ' :END';
document.body.appendChild(out);
</script>)";

struct Rendered {
  std::optional<Image> image;
  std::string layout;  // what kMeasureScript found
  std::string dom;
};

Rendered render(const std::string& chromium, const std::string& html, const std::string& tag) {
  const fs::path dir = fs::temp_directory_path() / ("ktune-chromium-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path page = dir / (tag + ".html"), measured = dir / (tag + "-measured.html"),
                 shot = dir / (tag + ".png");
  std::ofstream(page) << html;
  std::string with_script = html;
  with_script.insert(with_script.rfind("</body>"), kMeasureScript);
  std::ofstream(measured) << with_script;
  run("'" + chromium + "'" + kChromeFlags + "--screenshot='" + shot.string() + "' 'file://" +
      page.string() + "' 2>/dev/null");
  Rendered r;
  r.image = decode_png(read_bytes(shot));
  r.dom = run("'" + chromium + "'" + kChromeFlags + "--dump-dom 'file://" + measured.string() +
              "' 2>/dev/null");
  // The script's own text holds the words too: the verdict is the <pre> it appended.
  const auto at = r.dom.find("<pre>LAYOUT "), end = r.dom.find(" :END</pre>");
  if (at != std::string::npos && end != std::string::npos)
    r.layout = r.dom.substr(at + 5, end - at - 5);
  if (const char* keep = std::getenv("KTUNE_KEEP_SCREENSHOT"); keep && *keep) {
    fs::create_directories(keep);
    fs::copy_file(shot, fs::path(keep) / (tag + ".png"), fs::copy_options::overwrite_existing);
  }
  fs::remove_all(dir);
  return r;
}

analyze::Analysis analysis_of(trace::Trace t, const analyze::Ceilings& ceilings) {
  analyze::MemorySource source(std::move(t));
  analyze::AnalysisOptions options;
  options.ceilings = ceilings;
  return analyze::analyze(source, options);
}

TEST(ReportHtmlChromium, RooflinePointsAndLabelsAreWhereTheDataPutsThem) {
  const auto chromium = find_chromium();
  if (!chromium)
    GTEST_SKIP() << "no Chromium installed (apt-get install chromium-headless-shell, or set "
                    "KTUNE_CHROMIUM): the rendered roofline is not checked";
  const std::string html = render_html(
      analysis_of(analyze::test::sample_counter_trace(), analyze::test::h100_ceilings()), {});
  const Rendered r = render(*chromium, html, "roofline-sample");
  ASSERT_TRUE(r.image.has_value()) << "Chromium wrote no readable PNG";
  const Image& image = *r.image;

  // The plot area: the only pixels of the roofline's background colour (#fbfaf0).
  int x0 = image.width, y0 = image.height, x1 = -1, y1 = -1;
  for (int y = 0; y < image.height; ++y)
    for (int x = 0; x < image.width; ++x)
      if (near_colour(image.at(x, y), {0xfb, 0xfa, 0xf0}, 0)) {
        x0 = std::min(x0, x), y0 = std::min(y0, y), x1 = std::max(x1, x), y1 = std::max(y1, y);
      }
  ASSERT_GE(x1, 0) << "no roofline plot area in the screenshot";
  // The SVG draws it at (72, 16), 560 x 360; the fill starts inside its 1-px border.
  EXPECT_NEAR(x1 - x0, 560, 3);
  EXPECT_NEAR(y1 - y0, 360, 3);
  const double dx = x0 - 72.5, dy = y0 - 16.5;

  // Every kernel's point: its verdict's colour within a few pixels of the centre the SVG gives.
  const std::regex circle(
      "<circle cx=\"([0-9.]+)\" cy=\"([0-9.]+)\" r=\"[0-9.]+\" fill=\"#([0-9a-f]{6})\"");
  std::size_t points = 0;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), circle);
       it != std::sregex_iterator(); ++it) {
    const double cx = std::stod((*it)[1]) + dx, cy = std::stod((*it)[2]) + dy;
    const long rgb = std::stol((*it)[3], nullptr, 16);
    const std::array<int, 3> colour = {int(rgb >> 16), int((rgb >> 8) & 255), int(rgb & 255)};
    bool red = false;
    for (int y = int(cy) - 3; y <= int(cy) + 3 && !red; ++y)
      for (int x = int(cx) - 3; x <= int(cx) + 3 && !red; ++x)
        red = x >= 0 && y >= 0 && x < image.width && y < image.height &&
              near_colour(image.at(x, y), colour, 24);
    EXPECT_TRUE(red) << "no point drawn at (" << cx << ", " << cy << ")";
    ++points;
  }
  EXPECT_EQ(points, 5u);  // the copy does no FLOPs, the tiny kernel's were not collected
  // The BF16 = FP16 roof (#7b4fa0) crosses the plot's right half.
  bool roof = false;
  for (int y = y0; y <= y1 && !roof; ++y)
    roof = near_colour(image.at(x1 - 40, y), {0x7b, 0x4f, 0xa0}, 30);
  EXPECT_TRUE(roof) << "no BF16 roof drawn";

  for (const char* label :
       {"Arithmetic intensity (FLOP/byte)", "Performance (FLOP/s)", "BF16 = FP16 660 TFLOP/s",
        "FP32 51 TFLOP/s", "DRAM 3 TB/s", "nvjet_tst", "Not on the chart, doing no FLOPs"})
    EXPECT_NE(r.dom.find(label), std::string::npos) << label;
  // 2 roof labels, the slope's and one number per point, none overlapping or clipped.
  EXPECT_EQ(r.layout, "LAYOUT labels=8 points=5: ok") << r.layout;

  // The measurement sees what it is there to see: a roof label printed twice over itself.
  std::string twice = html;
  const std::size_t label = twice.rfind("<text", twice.find("roof-label"));
  const std::size_t end = twice.find("</text>", label) + 7;
  twice.insert(end, twice.substr(label, end - label));
  EXPECT_NE(render(*chromium, twice, "roofline-twice").layout.find("overlap: BF16 = FP16"),
            std::string::npos);
}

// A crowded chart: PyTorch kernels whose points nearly coincide, and BF16 and FP16 roofs at
// nearly one height (989 and 900 TFLOP/s, 6 px apart), the layout that printed labels over
// each other. Its screenshot is the one kept under logs/.
TEST(ReportHtmlChromium, CrowdedRooflineLabelsDoNotOverlap) {
  const auto chromium = find_chromium();
  if (!chromium) GTEST_SKIP() << "no Chromium installed: the rendered roofline is not checked";
  namespace m = trace::metric;
  analyze::test::CounterTraceBuilder b;
  const char* const names[] = {
      "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl("
      "at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() "
      "const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, "
      "at::detail::Array<char*, 2> >(int, at::detail::Array<char*, 2>)",
      "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, "
      "float, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3> >("
      "int, at::detail::Array<char*, 3>)",
      "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, "
      "float, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 2> >("
      "int, at::detail::Array<char*, 2>)",
      "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
      "at::native::func_wrapper_t<float, at::native::sum_functor<float, float, "
      "float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, "
      "4, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
      "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda("
      "float, float)#1}>, unsigned int, float, 4, 4>)",
      "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
      "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)",
      "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, "
      "float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, "
      "float*, float*, c10::BFloat16*)",
      "void (anonymous namespace)::softmax_warp_forward<c10::BFloat16, c10::BFloat16, float, 10, "
      "false, false>(c10::BFloat16*, c10::BFloat16 const*, int, int, int, bool const*, int, "
      "bool)",
      "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<"
      "at::native::BinaryFunctor<float, float, float, at::native::binary_internal::AddFunctor<"
      "float> > >(at::TensorIteratorBase&, at::native::BinaryFunctor<float, float, float, "
      "at::native::binary_internal::AddFunctor<float> > const&)::{lambda(int)#1}>(int, "
      "at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<float, float, float, "
      "at::native::binary_internal::AddFunctor<float> > >(at::TensorIteratorBase&, "
      "at::native::BinaryFunctor<float, float, float, at::native::binary_internal::AddFunctor<"
      "float> > const&)::{lambda(int)#1})",
  };
  // Elementwise kernels: about 1/8 FLOP per byte at 60-80 % of DRAM, nearly on top of each other.
  double i = 0;
  for (const char* name : names) {
    const double bytes = 64e6 * (1 + 0.01 * i), us = 25 * (1 + 0.015 * i);
    b.launch(name, us, 65536, 256, 24, 0,
             {{m::kDuration, us * 1e3},
              {m::kSmThroughputPct, 30},
              {m::kMemoryThroughputPct, 75},
              {m::kDramThroughputPct, 72},
              {m::kDramBytesRead, bytes / 2},
              {m::kDramBytesWrite, bytes / 2},
              {m::kFp32Fma, bytes / 16},
              {m::kAchievedOccupancyPct, 80}});
    ++i;
  }
  b.tensor_gemm();
  b.copy();
  b.fma_loop();
  analyze::test::add_h100_identity(b.t);
  analyze::Ceilings c = analyze::test::h100_ceilings();
  c.bf16_flop_per_s = 989e12;
  c.fp16_flop_per_s = 900e12;
  const std::string html = render_html(analysis_of(b.t, c), {});
  EXPECT_NE(html.find("BF16 989 TFLOP/s"), std::string::npos);
  EXPECT_NE(html.find("FP16 900 TFLOP/s"), std::string::npos);
  const Rendered r = render(*chromium, html, "roofline-crowded");
  ASSERT_TRUE(r.image.has_value()) << "Chromium wrote no readable PNG";
  // 4 labels of roofs and slope, 10 numbered points (not the copy), none overlapping or clipped.
  EXPECT_EQ(r.layout, "LAYOUT labels=14 points=10: ok") << r.layout;
  EXPECT_NE(r.dom.find("vectorized_elementwise_kernel&lt;GeluCUDAKernelImpl&gt;"),
            std::string::npos);
}

}  // namespace
}  // namespace ktune::report
