// DDSketch with dense buckets. Bucket i holds values in (gamma^(i-1), gamma^i], gamma =
// (1 + alpha) / (1 - alpha); answering 2 gamma^i / (gamma + 1) keeps every answer within alpha of
// any value in the bucket.
#include "ktune/fleet/sketch.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/core/error.hpp"

namespace ktune::fleet {
namespace {

constexpr std::uint8_t kBytesVersion = 1;

void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

std::uint64_t zigzag(std::int64_t v) {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
std::int64_t unzigzag(std::uint64_t v) {
  return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
}

struct Reader {
  std::string_view bytes;
  const std::string& where;
  std::size_t pos = 0;

  [[noreturn]] void bad(const char* what) const {
    throw Error(
        fmt::format("{} is not a ktune quantile sketch ({} at byte {}); ingest the trace "
                    "again to rewrite it.",
                    where, what, pos));
  }
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos >= bytes.size()) bad("truncated");
      const auto b = static_cast<std::uint8_t>(bytes[pos++]);
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    bad("varint too long");
  }
};

void check_alpha(double alpha, const std::string& where) {
  if (!(alpha > 0 && alpha < 0.5))
    throw Error(
        fmt::format("{}: relative_accuracy {} is not in (0, 0.5); use e.g. 0.01.", where, alpha));
}

}  // namespace

QuantileSketch::QuantileSketch(double relative_accuracy) : alpha_(relative_accuracy) {
  check_alpha(alpha_, "QuantileSketch");
  gamma_ = (1 + alpha_) / (1 - alpha_);
  log_gamma_ = std::log(gamma_);
}

int QuantileSketch::index_of(double value_ns) const {
  return static_cast<int>(std::ceil(std::log(value_ns) / log_gamma_));
}

double QuantileSketch::value_of(int index) const {
  return 2 * std::pow(gamma_, index) / (gamma_ + 1);
}

void QuantileSketch::add(double value_ns, std::uint64_t count) {
  if (count == 0) return;
  count_ += count;
  if (!(value_ns >= kMinValueNs)) {  // NaN counts here too: never a bucket index from it
    zero_count_ += count;
    return;
  }
  const int i = index_of(value_ns);
  if (counts_.empty()) {
    offset_ = i;
    counts_.assign(1, 0);
  } else if (i < offset_) {
    counts_.insert(counts_.begin(), static_cast<std::size_t>(offset_ - i), 0);
    offset_ = i;
  } else if (i >= offset_ + static_cast<int>(counts_.size())) {
    counts_.resize(static_cast<std::size_t>(i - offset_ + 1), 0);
  }
  counts_[static_cast<std::size_t>(i - offset_)] += count;
}

void QuantileSketch::merge(const QuantileSketch& other) {
  if (other.alpha_ != alpha_)
    throw Error(fmt::format(
        "cannot merge quantile sketches of relative accuracy {} and {}; re-ingest the traces with "
        "one accuracy.",
        alpha_, other.alpha_));
  if (other.empty()) return;
  count_ += other.count_;
  zero_count_ += other.zero_count_;
  if (other.counts_.empty()) return;
  if (counts_.empty()) {
    offset_ = other.offset_;
    counts_ = other.counts_;
    return;
  }
  const int lo = std::min(offset_, other.offset_);
  const int hi = std::max(offset_ + static_cast<int>(counts_.size()),
                          other.offset_ + static_cast<int>(other.counts_.size()));
  if (lo < offset_) counts_.insert(counts_.begin(), static_cast<std::size_t>(offset_ - lo), 0);
  offset_ = lo;
  counts_.resize(static_cast<std::size_t>(hi - lo), 0);
  const std::size_t shift = static_cast<std::size_t>(other.offset_ - lo);
  for (std::size_t k = 0; k < other.counts_.size(); ++k) counts_[shift + k] += other.counts_[k];
}

double QuantileSketch::quantile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  const auto rank = static_cast<std::uint64_t>(q * static_cast<double>(count_ - 1));
  if (rank < zero_count_) return 0;
  std::uint64_t seen = zero_count_;
  for (std::size_t k = 0; k < counts_.size(); ++k) {
    seen += counts_[k];
    if (seen > rank) return value_of(offset_ + static_cast<int>(k));
  }
  return value_of(offset_ + static_cast<int>(counts_.size()) - 1);
}

std::string QuantileSketch::to_bytes() const {
  std::string out;
  out += static_cast<char>(kBytesVersion);
  // The accuracy in millionths: every sketch ktune writes uses a round figure.
  put_varint(out, static_cast<std::uint64_t>(std::llround(alpha_ * 1e6)));
  put_varint(out, zero_count_);
  // Runs of (gap of empty buckets, count): sparse tails cost nothing.
  std::size_t nonzero = 0;
  for (auto c : counts_) nonzero += c != 0;
  put_varint(out, nonzero);
  std::int64_t previous = 0;
  bool first = true;
  for (std::size_t k = 0; k < counts_.size(); ++k) {
    if (counts_[k] == 0) continue;
    const std::int64_t index = offset_ + static_cast<std::int64_t>(k);
    put_varint(out, zigzag(first ? index : index - previous));
    put_varint(out, counts_[k]);
    previous = index;
    first = false;
  }
  return out;
}

QuantileSketch QuantileSketch::from_bytes(std::string_view bytes, const std::string& where) {
  Reader r{bytes, where};
  if (bytes.empty() || static_cast<std::uint8_t>(bytes[0]) != kBytesVersion)
    r.bad("unknown version");
  r.pos = 1;
  const double alpha = static_cast<double>(r.varint()) / 1e6;
  if (!(alpha > 0 && alpha < 0.5)) r.bad("bad relative accuracy");
  QuantileSketch s(alpha);
  s.zero_count_ = r.varint();
  s.count_ = s.zero_count_;
  const std::uint64_t n = r.varint();
  if (n > bytes.size()) r.bad("bucket count too large");
  std::int64_t index = 0;
  for (std::uint64_t k = 0; k < n; ++k) {
    const std::int64_t delta = unzigzag(r.varint());
    index = k == 0 ? delta : index + delta;
    const std::uint64_t c = r.varint();
    if (index < -100000 || index > 100000 || (k > 0 && delta <= 0) || c == 0) r.bad("bad bucket");
    if (s.counts_.empty()) s.offset_ = static_cast<int>(index);
    s.counts_.resize(static_cast<std::size_t>(index - s.offset_ + 1), 0);
    s.counts_.back() = c;
    s.count_ += c;
  }
  if (r.pos != bytes.size()) r.bad("trailing bytes");
  return s;
}

std::string QuantileSketch::to_hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  const std::string b = to_bytes();
  std::string out(2 * b.size(), '0');
  for (std::size_t i = 0; i < b.size(); ++i) {
    const auto v = static_cast<std::uint8_t>(b[i]);
    out[2 * i] = kDigits[v >> 4];
    out[2 * i + 1] = kDigits[v & 15];
  }
  return out;
}

QuantileSketch QuantileSketch::from_hex(std::string_view hex, const std::string& where) {
  auto nibble = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw Error(
        fmt::format("{} is not a hex-encoded ktune quantile sketch; ingest the trace "
                    "again to rewrite it.",
                    where));
  };
  if (hex.size() % 2) nibble('x');
  std::string bytes(hex.size() / 2, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<char>(nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]));
  return from_bytes(bytes, where);
}

nlohmann::json QuantileSketch::to_json() const {
  return {{"schema_version", kSketchSchemaVersion},
          {"relative_accuracy", alpha_},
          {"zero_count", zero_count_},
          {"offset", offset_},
          {"counts", counts_}};
}

QuantileSketch QuantileSketch::from_json(const nlohmann::json& j, const std::string& where) {
  try {
    if (j.at("schema_version").get<int>() != kSketchSchemaVersion)
      throw Error(fmt::format("schema_version {} is not {}", j.at("schema_version").dump(),
                              kSketchSchemaVersion));
    const double alpha = j.at("relative_accuracy").get<double>();
    check_alpha(alpha, where);
    QuantileSketch s(alpha);
    s.zero_count_ = j.at("zero_count").get<std::uint64_t>();
    s.offset_ = j.at("offset").get<int>();
    s.counts_ = j.at("counts").get<std::vector<std::uint64_t>>();
    s.count_ = s.zero_count_;
    for (auto c : s.counts_) s.count_ += c;
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw Error(
        fmt::format("{}: {}; a sketch's JSON has schema_version, relative_accuracy, "
                    "zero_count, offset and counts.",
                    where, e.what()));
  }
}

bool QuantileSketch::operator==(const QuantileSketch& o) const {
  // Equal as distributions: leading and trailing empty buckets do not matter.
  if (alpha_ != o.alpha_ || count_ != o.count_ || zero_count_ != o.zero_count_) return false;
  return to_bytes() == o.to_bytes();
}

}  // namespace ktune::fleet
