#pragma once
// Reading files that may be gzip/zlib-compressed (T4 and Kernel Tuner JSON, PyTorch profiler
// traces), with bounds on what they may inflate to, so a small hostile file cannot make ktune
// allocate gigabytes. Plain files pass through unchanged.
#include <cstdint>
#include <filesystem>
#include <streambuf>
#include <string>

namespace ktune {

// A gzip/zlib or plain file read through zlib, the bounds enforced as bytes come out. Past
// kMaxInflatedBytes a file must keep to kMaxRatio times its compressed size; no stretch between
// two of its records (record_boundary) may pass kMaxPieceBytes, nor a file read whole (whole())
// kMaxWholeBytes. Errors are ktune::Error sentences naming the file; `what` completes "give the
// path of ..." ("a T4 or cache file").
class CompressedFile {
 public:
  static constexpr std::uint64_t kMaxInflatedBytes = std::uint64_t{256} << 20;
  static constexpr std::uint64_t kMaxRatio = 200;
  static constexpr std::uint64_t kMaxPieceBytes = std::uint64_t{64} << 20;
  static constexpr std::uint64_t kMaxWholeBytes = std::uint64_t{512} << 20;

  CompressedFile(const std::filesystem::path& path, std::string what);
  ~CompressedFile();
  CompressedFile(const CompressedFile&) = delete;
  CompressedFile& operator=(const CompressedFile&) = delete;

  // Up to `size` bytes into `buf`; 0 at the end.
  std::size_t read(char* buf, unsigned size);
  // A record ended: what came before it is no longer held.
  void record_boundary() { piece_ = 0; }
  // The whole file is held at once (no records to stream).
  void whole() { whole_ = true; }
  std::uint64_t inflated_bytes() const { return inflated_; }

 private:
  std::string path_, what_;
  void* file_ = nullptr;  // gzFile
  std::uint64_t compressed_ = 0, inflated_ = 0, piece_ = 0;
  bool whole_ = false;
};

// A read-only std::streambuf over a CompressedFile, so a JSON parser can stream it.
class CompressedStreamBuf : public std::streambuf {
 public:
  CompressedStreamBuf(const std::filesystem::path& path, std::string what)
      : in_(path, std::move(what)) {}
  CompressedFile& file() { return in_; }

 protected:
  int_type underflow() override;

 private:
  CompressedFile in_;
  char buf_[1 << 16];
};

// Reads a whole file (at most kMaxWholeBytes inflated), inflating it when it is compressed.
std::string read_maybe_compressed(const std::filesystem::path& path, const std::string& what);

}  // namespace ktune
