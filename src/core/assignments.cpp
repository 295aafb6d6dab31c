#include "ktune/core/assignments.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "ktune/core/error.hpp"

namespace ktune {

std::vector<Assignment> parse_assignments(std::string_view text, std::string_view flag,
                                          std::string_view example) {
  std::vector<Assignment> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find(',', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = text.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == item.size())
      throw Error(fmt::format("{} item '{}' is not NAME=VALUE; write e.g. {} {}.", flag, item, flag,
                              example));
    Assignment a{std::string(item.substr(0, eq)), std::string(item.substr(eq + 1))};
    if (std::any_of(out.begin(), out.end(), [&](const Assignment& b) { return b.name == a.name; }))
      throw Error(fmt::format("{} names '{}' twice; give each name once, e.g. {} {}.", flag, a.name,
                              flag, example));
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace ktune
