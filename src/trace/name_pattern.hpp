#pragma once
// The counter tier's --kernel selection: a regular expression searched in kernel names, which come
// from the traced program (a templated kernel's name may be tens of kilobytes). std::regex
// backtracks and recurses once per character (8 s on a 20 KB name, a stack overflow at 30 KB,
// inside the user's program), so the tracer matches with this automaton instead: time linear in
// the name (times the pattern's size), memory fixed by the pattern, no recursion over the name.
//
// The syntax is the ECMAScript subset that names need: literals, '.', classes ([a-z_], [^0-9],
// \d \w \s and their negations), groups ( ) and (?: ), '|', the quantifiers * + ? {n} {n,} {n,m}
// (a trailing '?' accepted; laziness does not change whether a name matches), and the assertions
// ^ $ \b \B. Back-references and look-arounds, which no automaton can run, are refused by name.
#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ktune::trace {

class NamePattern {
 public:
  // Limits on the pattern (which the user writes): its compiled size and its nesting.
  static constexpr std::size_t kMaxInstructions = 20'000;
  static constexpr int kMaxNesting = 100;

  NamePattern() = default;  // matches every name
  // Throws ktune::Error "<what is wrong> at position N" for a pattern outside the syntax above.
  explicit NamePattern(std::string_view pattern);

  // Whether the pattern matches somewhere in `name` (std::regex_search's meaning).
  bool search(std::string_view name) const;

 private:
  enum class Op : std::uint8_t {
    byte_set,
    split,
    jump,
    line_start,
    line_end,
    word,
    not_word,
    match
  };
  struct Instruction {
    Op op = Op::match;
    std::uint32_t x = 0, y = 0;  // byte_set: set index; split: both targets; jump: x
  };
  std::vector<Instruction> program_;
  std::vector<std::bitset<256>> sets_;
  friend class PatternCompiler;
};

}  // namespace ktune::trace
