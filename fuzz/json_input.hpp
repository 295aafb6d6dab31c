#pragma once
// Shared by the JSON fuzz targets: the fuzzer's bytes as a JSON document, or nothing when they do
// not parse (the readers under test take parsed JSON; nlohmann's parser is not ours to fuzz).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

namespace ktune::fuzz {

inline std::optional<nlohmann::json> json_input(const std::uint8_t* data, std::size_t size) {
  nlohmann::json j =
      nlohmann::json::parse(std::string_view(reinterpret_cast<const char*>(data), size), nullptr,
                            /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

}  // namespace ktune::fuzz
