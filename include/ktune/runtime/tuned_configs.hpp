#pragma once
// The application side of the cache: load a tuning pack (or a store) once, then ask for the tuned
// config of (op, dtype, shape) on this GPU at no search cost. The index is immutable after load,
// so lookup() is safe from any number of threads; an exact hit allocates nothing.
#include <array>
#include <filesystem>
#include <memory>
#include <span>
#include <string_view>

#include "ktune/store/cache_entry.hpp"
#include "ktune/store/pack.hpp"

namespace ktune::runtime {

struct Answer {
  store::Match match = store::Match::none;
  const nlohmann::json* config = nullptr;    // null for Match::none; owned by the TunedConfigs
  const store::CacheEntry* entry = nullptr;  // behind an exact or nearest answer
  bool stale = false;  // tuned under another toolkit or driver: valid, but re-tune it
};

class TunedConfigs {
 public:
  // Keeps the pack's entries for env.arch that are not invalidated.
  TunedConfigs(const store::Pack& pack, store::Environment env);
  static TunedConfigs from_pack_file(const std::filesystem::path& path, store::Environment env);
  // Reads the store once (its entries for env.arch) and closes it.
  static TunedConfigs from_store(const std::string& url, store::Environment env);
  ~TunedConfigs();
  TunedConfigs(TunedConfigs&&) noexcept;
  TunedConfigs& operator=(TunedConfigs&&) noexcept;

  // Same rule as Store::lookup: exact bucket on this device -> nearest shape of the op on this
  // arch -> the op's default -> none.
  Answer lookup(std::string_view op, std::string_view dtype,
                std::span<const std::int64_t> shape) const;

  const store::Environment& environment() const;
  std::size_t size() const;  // entries held

  static constexpr std::size_t kMaxRank = 8;  // shapes of more dimensions only match "nearest"

 private:
  struct Index;
  std::unique_ptr<Index> index_;
};

}  // namespace ktune::runtime
