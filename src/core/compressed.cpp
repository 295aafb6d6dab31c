#include "ktune/core/compressed.hpp"

#include <zlib.h>

#include <algorithm>

#include <fmt/format.h>

#include "ktune/core/error.hpp"

namespace ktune {

// Real T4, cache and profiler JSON compresses 10 to 50 times; a 2 MB file that inflated to 2 GiB
// once took 4.2 GB to read, hence the ratio bound past kMaxInflatedBytes.
CompressedFile::CompressedFile(const std::filesystem::path& path, std::string what)
    : path_(path.string()), what_(std::move(what)) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status))  // "not a regular file" misled about a mistyped path
    throw Error(fmt::format("cannot read {}: no such file; give the path of {}.", path_, what_));
  if (!std::filesystem::is_regular_file(status))
    throw Error(fmt::format("cannot read {}: it is not a regular file; give the path of {}.", path_,
                            what_));
  compressed_ = std::filesystem::file_size(path, ec);
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f)
    throw Error(fmt::format("cannot open {}; check the path and that it is readable.", path_));
  gzbuffer(f, 1 << 17);
  file_ = f;
}

CompressedFile::~CompressedFile() {
  gzclose(static_cast<gzFile>(file_));
}

std::size_t CompressedFile::read(char* buf, unsigned size) {
  auto* f = static_cast<gzFile>(file_);
  const int n = gzread(f, buf, size);
  if (n < 0) {
    int code = 0;
    throw Error(fmt::format("{}: cannot decompress ({}); the file is damaged or truncated.", path_,
                            gzerror(f, &code)));
  }
  inflated_ += static_cast<std::uint64_t>(n);
  piece_ += static_cast<std::uint64_t>(n);
  if (inflated_ > kMaxInflatedBytes &&
      inflated_ > kMaxRatio * std::max<std::uint64_t>(compressed_, 1))
    throw Error(fmt::format(
        "{}: inflates to more than {} times its {} bytes, far past what JSON compresses; ktune "
        "does not read it (a damaged or hostile file).",
        path_, kMaxRatio, compressed_));
  if (piece_ > (whole_ ? kMaxWholeBytes : kMaxPieceBytes))
    throw Error(fmt::format(
        "{}: holds more than {} MiB {}; ktune does not read it (a damaged or hostile file).", path_,
        (whole_ ? kMaxWholeBytes : kMaxPieceBytes) >> 20,
        whole_ ? "in all" : "between two of its records"));
  return static_cast<std::size_t>(n);
}

CompressedStreamBuf::int_type CompressedStreamBuf::underflow() {
  const std::size_t n = in_.read(buf_, sizeof buf_);
  if (n == 0) return traits_type::eof();
  setg(buf_, buf_, buf_ + n);
  return traits_type::to_int_type(buf_[0]);
}

std::string read_maybe_compressed(const std::filesystem::path& path, const std::string& what) {
  CompressedFile in(path, what);
  in.whole();
  std::string out;
  char buf[1 << 16];
  while (const std::size_t n = in.read(buf, sizeof buf)) out.append(buf, n);
  return out;
}

}  // namespace ktune
