// The HTML report's roofline as a browser draws it: headless Chromium renders the report of a
// trace with counters to a PNG, and the test looks for each kernel's point (its red) where the
// SVG says it is, relative to the plot area (its unique background colour), and for the axis
// labels in the rendered DOM. Skips, saying so, when no Chromium is installed (scripts/deps.sh
// installs Debian's chromium-headless-shell; CI has it).
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

TEST(ReportHtmlChromium, RooflinePointsAndLabelsAreWhereTheDataPutsThem) {
  const auto chromium = find_chromium();
  if (!chromium)
    GTEST_SKIP() << "no Chromium installed (apt-get install chromium-headless-shell, or set "
                    "KTUNE_CHROMIUM): the rendered roofline is not checked";
  const fs::path dir = fs::temp_directory_path() / ("ktune-chromium-" + std::to_string(getpid()));
  fs::create_directories(dir);
  analyze::MemorySource source(analyze::test::sample_counter_trace());
  analyze::AnalysisOptions options;
  options.ceilings = analyze::test::h100_ceilings();
  const std::string html = render_html(analyze::analyze(source, options), {});
  const fs::path page = dir / "report.html", shot = dir / "report.png";
  std::ofstream(page) << html;

  const std::string flags =
      " --headless --no-sandbox --disable-gpu --hide-scrollbars "
      "--force-device-scale-factor=1 --window-size=1600,1200 ";
  run("'" + *chromium + "'" + flags + "--screenshot='" + shot.string() + "' 'file://" +
      page.string() + "' 2>/dev/null");
  const auto image = decode_png(read_bytes(shot));
  ASSERT_TRUE(image.has_value()) << "Chromium wrote no readable PNG at " << shot;

  // The plot area: the only pixels of the roofline's background colour (#fbfaf0).
  int x0 = image->width, y0 = image->height, x1 = -1, y1 = -1;
  for (int y = 0; y < image->height; ++y)
    for (int x = 0; x < image->width; ++x)
      if (near_colour(image->at(x, y), {0xfb, 0xfa, 0xf0}, 0)) {
        x0 = std::min(x0, x), y0 = std::min(y0, y), x1 = std::max(x1, x), y1 = std::max(y1, y);
      }
  ASSERT_GE(x1, 0) << "no roofline plot area in the screenshot";
  // The SVG draws it at (70, 20), 520 x 340; the fill starts inside its 1-px border.
  EXPECT_NEAR(x1 - x0, 520, 3);
  EXPECT_NEAR(y1 - y0, 340, 3);
  const double dx = x0 - 70.5, dy = y0 - 20.5;

  // Every kernel's point: red (#d62728) within a few pixels of the centre the SVG gives.
  const std::regex circle("<circle cx=\"([0-9.]+)\" cy=\"([0-9.]+)\"");
  std::size_t points = 0;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), circle);
       it != std::sregex_iterator(); ++it) {
    const double cx = std::stod((*it)[1]) + dx, cy = std::stod((*it)[2]) + dy;
    bool red = false;
    for (int y = int(cy) - 3; y <= int(cy) + 3 && !red; ++y)
      for (int x = int(cx) - 3; x <= int(cx) + 3 && !red; ++x)
        red = x >= 0 && y >= 0 && x < image->width && y < image->height &&
              near_colour(image->at(x, y), {0xd6, 0x27, 0x28}, 24);
    EXPECT_TRUE(red) << "no point drawn at (" << cx << ", " << cy << ")";
    ++points;
  }
  EXPECT_EQ(points, 6u);
  // The BF16 roof (#7b4fa0) crosses the plot's right half.
  bool roof = false;
  for (int y = y0; y <= y1 && !roof; ++y)
    roof = near_colour(image->at(x1 - 40, y), {0x7b, 0x4f, 0xa0}, 30);
  EXPECT_TRUE(roof) << "no BF16 roof drawn";

  const std::string dom =
      run("'" + *chromium + "'" + flags + "--dump-dom 'file://" + page.string() + "' 2>/dev/null");
  for (const char* label : {"Arithmetic intensity (FLOP/byte)", "Performance (FLOP/s)",
                            "BF16 660 TFLOP/s", "FP32 51 TFLOP/s", "DRAM 3 TB/s", "nvjet_tst"})
    EXPECT_NE(dom.find(label), std::string::npos) << label;
  if (!std::getenv("KTUNE_KEEP_SCREENSHOT")) fs::remove_all(dir);
}

}  // namespace
}  // namespace ktune::report
