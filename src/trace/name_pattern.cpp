#include "name_pattern.hpp"

#include <algorithm>
#include <cctype>
#include <limits>

#include <fmt/format.h>

#include "ktune/core/error.hpp"

namespace ktune::trace {
namespace {

using ByteSet = std::bitset<256>;

bool is_word(unsigned char c) {
  return std::isalnum(c) || c == '_';
}

ByteSet class_of(char letter) {
  ByteSet s;
  for (int c = 0; c < 256; ++c) {
    const auto u = static_cast<unsigned char>(c);
    switch (std::tolower(letter)) {
      case 'd':
        s[c] = u >= '0' && u <= '9';
        break;
      case 'w':
        s[c] = is_word(u);
        break;
      case 's':
        s[c] = u == ' ' || (u >= '\t' && u <= '\r');
        break;
    }
  }
  return std::isupper(static_cast<unsigned char>(letter)) ? ~s : s;
}

}  // namespace

// The pattern as a tree, then the tree as instructions of a Thompson automaton.
class PatternCompiler {
 public:
  PatternCompiler(std::string_view pattern, NamePattern& out) : text_(pattern), out_(out) {}

  void compile() {
    const Node root = alternation(0);
    if (at_ < text_.size()) fail("unmatched ')'");
    emit(root);
    push({NamePattern::Op::match});
  }

 private:
  using Op = NamePattern::Op;
  static constexpr int kUnbounded = -1;

  struct Node {
    enum class Kind { empty, bytes, assertion, concat, alternation, repeat } kind = Kind::empty;
    std::uint32_t set = 0;  // bytes
    Op assertion = Op::match;
    std::vector<Node> children;  // concat, alternation; repeat: one
    int min = 0, max = 0;        // repeat; max kUnbounded: no limit
  };

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(fmt::format("{} at position {}", what, at_));
  }
  bool more() const { return at_ < text_.size(); }
  char peek() const { return text_[at_]; }

  Node bytes(const ByteSet& s) {
    out_.sets_.push_back(s);
    Node n;
    n.kind = Node::Kind::bytes;
    n.set = static_cast<std::uint32_t>(out_.sets_.size() - 1);
    return n;
  }
  static Node assertion(Op op) {
    Node n;
    n.kind = Node::Kind::assertion;
    n.assertion = op;
    return n;
  }

  Node alternation(int depth) {
    if (depth > NamePattern::kMaxNesting)
      fail(fmt::format("groups nested deeper than {}", NamePattern::kMaxNesting));
    Node alt;
    alt.kind = Node::Kind::alternation;
    alt.children.push_back(concatenation(depth));
    while (more() && peek() == '|') {
      ++at_;
      alt.children.push_back(concatenation(depth));
    }
    return alt.children.size() == 1 ? std::move(alt.children[0]) : alt;
  }

  Node concatenation(int depth) {
    Node cat;
    cat.kind = Node::Kind::concat;
    while (more() && peek() != '|' && peek() != ')') cat.children.push_back(repeated(depth));
    return cat;
  }

  Node repeated(int depth) {
    if (peek() == '*' || peek() == '+' || peek() == '?') fail("nothing to repeat");
    Node atom_node = atom(depth);
    int min = 0, max = 0;
    if (!more() || !quantifier(min, max)) return atom_node;
    if (atom_node.kind == Node::Kind::assertion) fail("an assertion cannot be repeated");
    if (more() && peek() == '?') ++at_;  // lazy: the same names match
    if (more() && (peek() == '*' || peek() == '+' || peek() == '?' || peek() == '{')) {
      int a = 0, b = 0;
      const std::size_t here = at_;
      if (peek() != '{' || quantifier(a, b)) {
        at_ = here;
        fail("nothing to repeat");
      }
    }
    Node r;
    r.kind = Node::Kind::repeat;
    r.min = min;
    r.max = max;
    r.children.push_back(std::move(atom_node));
    return r;
  }

  // * + ? {n} {n,} {n,m}; false (nothing consumed) when there is none, as '{' alone is a literal.
  bool quantifier(int& min, int& max) {
    switch (peek()) {
      case '*':
        ++at_;
        min = 0, max = kUnbounded;
        return true;
      case '+':
        ++at_;
        min = 1, max = kUnbounded;
        return true;
      case '?':
        ++at_;
        min = 0, max = 1;
        return true;
      case '{':
        break;
      default:
        return false;
    }
    std::size_t i = at_ + 1;
    const auto number = [&](int& v) {
      const std::size_t start = i;
      long long n = 0;
      while (i < text_.size() && std::isdigit(static_cast<unsigned char>(text_[i]))) {
        n = std::min<long long>(n * 10 + (text_[i] - '0'), std::numeric_limits<int>::max());
        ++i;
      }
      v = static_cast<int>(n);
      return i > start;
    };
    if (!number(min)) return false;
    max = min;
    if (i < text_.size() && text_[i] == ',') {
      ++i;
      if (!number(max)) max = kUnbounded;
    }
    if (i >= text_.size() || text_[i] != '}') return false;
    if (max != kUnbounded && max < min) fail("a repeat count {n,m} with m below n");
    if (std::max(min, max) > static_cast<int>(NamePattern::kMaxInstructions))
      fail(fmt::format("a repeat count above {}", NamePattern::kMaxInstructions));
    at_ = i + 1;
    return true;
  }

  Node atom(int depth) {
    const char c = text_[at_++];
    switch (c) {
      case '(': {
        if (more() && peek() == '?') {
          if (at_ + 1 < text_.size() && text_[at_ + 1] == ':')
            at_ += 2;
          else
            fail("look-arounds and named groups are not supported (no automaton runs them)");
        }
        Node inner = alternation(depth + 1);
        if (!more() || peek() != ')') fail("missing ')'");
        ++at_;
        return inner;
      }
      case ')':
        --at_;
        fail("unmatched ')'");
      case '[':
        return byte_class();
      case '.': {
        ByteSet s;
        s.set();
        s['\n'] = s['\r'] = false;
        return bytes(s);
      }
      case '^':
        return assertion(Op::line_start);
      case '$':
        return assertion(Op::line_end);
      case '\\': {
        if (!more()) fail("a '\\' ends the pattern");
        const char e = text_[at_];
        if (e == 'b' || e == 'B') {
          ++at_;
          return assertion(e == 'b' ? Op::word : Op::not_word);
        }
        ByteSet s;
        escape(s, false);
        return bytes(s);
      }
      default: {
        ByteSet s;
        s[static_cast<unsigned char>(c)] = true;
        return bytes(s);
      }
    }
  }

  // After '\': adds what the escape stands for to `s`; returns the byte it names, or -1 for a
  // class (\d \w \s ...).
  int escape(ByteSet& s, bool in_class) {
    const char e = text_[at_++];
    const auto one = [&](unsigned char b) {
      s[b] = true;
      return static_cast<int>(b);
    };
    switch (e) {
      case 'd':
      case 'D':
      case 'w':
      case 'W':
      case 's':
      case 'S':
        s |= class_of(e);
        return -1;
      case 't':
        return one('\t');
      case 'n':
        return one('\n');
      case 'r':
        return one('\r');
      case 'f':
        return one('\f');
      case 'v':
        return one('\v');
      case '0':
        return one('\0');
      case 'b':
        if (in_class) return one('\b');
        break;
      case 'x': {
        const auto hex = [](char h) {
          return std::isxdigit(static_cast<unsigned char>(h))
                     ? (std::isdigit(static_cast<unsigned char>(h)) ? h - '0'
                                                                    : std::tolower(h) - 'a' + 10)
                     : -1;
        };
        if (at_ + 1 < text_.size() && hex(text_[at_]) >= 0 && hex(text_[at_ + 1]) >= 0) {
          const int v = hex(text_[at_]) * 16 + hex(text_[at_ + 1]);
          at_ += 2;
          return one(static_cast<unsigned char>(v));
        }
        return one('x');
      }
      default:
        break;
    }
    if (e >= '1' && e <= '9') {
      at_ -= 2;  // the position of the backslash
      fail("back-references are not supported (no automaton runs them)");
    }
    if (std::isalpha(static_cast<unsigned char>(e))) {
      at_ -= 2;
      fail(fmt::format("the escape '\\{}' is not supported", e));
    }
    return one(static_cast<unsigned char>(e));  // \. \( \\ ...: the character itself
  }

  Node byte_class() {
    ByteSet s;
    const bool negated = more() && peek() == '^';
    if (negated) ++at_;
    for (;;) {
      if (!more()) fail("missing ']'");
      if (peek() == ']') {
        ++at_;
        break;
      }
      const int lo = class_member(s);
      if (lo >= 0 && at_ + 1 < text_.size() && peek() == '-' && text_[at_ + 1] != ']') {
        ++at_;
        ByteSet ignored;
        const int hi = class_member(ignored);
        if (hi < 0) fail("a range in [...] ends in a class");
        if (hi < lo) fail("a range in [...] runs backwards");
        for (int b = lo; b <= hi; ++b) s[static_cast<std::size_t>(b)] = true;
      }
    }
    return bytes(negated ? ~s : s);
  }

  int class_member(ByteSet& s) {
    const char c = text_[at_++];
    if (c == '\\') {
      if (!more()) fail("missing ']'");
      return escape(s, true);
    }
    s[static_cast<unsigned char>(c)] = true;
    return static_cast<unsigned char>(c);
  }

  // --- code ---
  std::size_t push(NamePattern::Instruction i) {
    if (out_.program_.size() >= NamePattern::kMaxInstructions)
      throw Error(fmt::format("the pattern needs more than {} steps (a large repeat count?)",
                              NamePattern::kMaxInstructions));
    out_.program_.push_back(i);
    return out_.program_.size() - 1;
  }
  std::uint32_t here() const { return static_cast<std::uint32_t>(out_.program_.size()); }

  void emit(const Node& n) {
    switch (n.kind) {
      case Node::Kind::empty:
        return;
      case Node::Kind::bytes:
        push({Op::byte_set, n.set});
        return;
      case Node::Kind::assertion:
        push({n.assertion});
        return;
      case Node::Kind::concat:
        for (const Node& c : n.children) emit(c);
        return;
      case Node::Kind::alternation: {
        std::vector<std::size_t> jumps;
        for (std::size_t i = 0; i < n.children.size(); ++i) {
          const bool last = i + 1 == n.children.size();
          const std::size_t split = last ? 0 : push({Op::split});
          if (!last) out_.program_[split].x = here();
          emit(n.children[i]);
          if (!last) {
            jumps.push_back(push({Op::jump}));
            out_.program_[split].y = here();
          }
        }
        for (std::size_t j : jumps) out_.program_[j].x = here();
        return;
      }
      case Node::Kind::repeat: {
        const Node& body = n.children[0];
        for (int i = 0; i < n.min; ++i) emit(body);
        if (n.max == kUnbounded) {
          const std::size_t split = push({Op::split});
          out_.program_[split].x = here();
          emit(body);
          push({Op::jump, static_cast<std::uint32_t>(split)});
          out_.program_[split].y = here();
          return;
        }
        std::vector<std::size_t> splits;
        for (int i = n.min; i < n.max; ++i) {
          splits.push_back(push({Op::split}));
          out_.program_[splits.back()].x = here();
          emit(body);
        }
        for (std::size_t s : splits) out_.program_[s].y = here();
        return;
      }
    }
  }

  std::string_view text_;
  std::size_t at_ = 0;
  NamePattern& out_;
};

NamePattern::NamePattern(std::string_view pattern) {
  PatternCompiler(pattern, *this).compile();
}

bool NamePattern::search(std::string_view name) const {
  if (program_.empty()) return true;
  const std::size_t n = program_.size();
  std::vector<std::uint32_t> current, next, stack;
  std::vector<std::size_t> mark(n, std::numeric_limits<std::size_t>::max());
  current.reserve(n);
  next.reserve(n);
  std::size_t generation = 0;
  bool matched = false;
  // Adds `start` and every instruction reachable from it without reading a byte, at `pos`.
  const auto add = [&](std::vector<std::uint32_t>& list, std::uint32_t start, std::size_t pos) {
    stack.push_back(start);
    while (!stack.empty()) {
      const std::uint32_t pc = stack.back();
      stack.pop_back();
      if (mark[pc] == generation) continue;
      mark[pc] = generation;
      const Instruction& in = program_[pc];
      const auto word_before = [&] {
        return pos > 0 && is_word(static_cast<unsigned char>(name[pos - 1]));
      };
      const auto word_after = [&] {
        return pos < name.size() && is_word(static_cast<unsigned char>(name[pos]));
      };
      switch (in.op) {
        case Op::byte_set:
          list.push_back(pc);
          break;
        case Op::split:
          stack.push_back(in.y);
          stack.push_back(in.x);
          break;
        case Op::jump:
          stack.push_back(in.x);
          break;
        case Op::line_start:
          if (pos == 0) stack.push_back(pc + 1);
          break;
        case Op::line_end:
          if (pos == name.size()) stack.push_back(pc + 1);
          break;
        case Op::word:
          if (word_before() != word_after()) stack.push_back(pc + 1);
          break;
        case Op::not_word:
          if (word_before() == word_after()) stack.push_back(pc + 1);
          break;
        case Op::match:
          matched = true;
          break;
      }
    }
  };
  add(current, 0, 0);
  for (std::size_t i = 0; i < name.size() && !matched; ++i) {
    ++generation;
    next.clear();
    const auto byte = static_cast<unsigned char>(name[i]);
    for (std::uint32_t pc : current)
      if (sets_[program_[pc].x][byte]) add(next, pc + 1, i + 1);
    add(next, 0, i + 1);  // a match may start at every position
    current.swap(next);
  }
  return matched;
}

}  // namespace ktune::trace
