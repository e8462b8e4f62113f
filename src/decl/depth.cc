#include "decl/depth.hh"

#include "decl/toml_lex.hh"

#include <cstddef>
#include <vector>

namespace mesh::decl {

namespace {

class Scan {
 public:
  Scan(std::string_view text, int limit, std::vector<size_t>* headers)
      : t_(text), limit_(limit), headers_(headers) {}

  std::optional<TooDeep> run() {
    enum class Mode { LineStart, Key, Value, AfterValue } mode = Mode::LineStart;
    int keyBase = 0;     // the depth a key's first segment starts from
    int valueDepth = 0;  // the depth of the value about to be read
    while (i_ < t_.size() && !found_) {
      switch (mode) {
        case Mode::LineStart: {
          skipBlank(true);
          if (i_ >= t_.size()) break;
          if (t_[i_] == '[') {
            if (headers_) headers_->push_back(i_);
            ++i_;
            if (i_ < t_.size() && t_[i_] == '[') ++i_;
            header_ = key(0);
            skipLine();  // the closing bracket(s) and whatever toml++ will judge
          } else {
            keyBase = header_;
            mode = Mode::Key;
          }
          break;
        }
        case Mode::Key: {
          const size_t start = i_;
          const int segments = key(keyBase);
          skipSpaces();
          if (i_ < t_.size() && t_[i_] == '=') {
            ++i_;
            valueDepth = keyBase + segments;
            mode = Mode::Value;
          } else {
            if (i_ == start) ++i_;  // not a key: step over it (toml++ says what is wrong)
            mode = stack_.empty() ? (skipLine(), Mode::LineStart) : Mode::AfterValue;
          }
          break;
        }
        case Mode::Value: {
          skipBlank(inArray());
          if (i_ >= t_.size()) break;
          const char c = t_[i_];
          if (c == '"' || c == '\'') {
            i_ = endOfTomlString(t_, i_);
            mode = Mode::AfterValue;
          } else if (c == '[' || c == '{') {
            push(c == '[', valueDepth + 1);
            ++i_;
            if (c == '[') {
              valueDepth = valueDepth + 1;  // its elements
            } else {
              skipSpaces();
              if (i_ < t_.size() && t_[i_] == '}') {
                ++i_;
                stack_.pop_back();
                mode = Mode::AfterValue;
              } else {
                keyBase = stack_.back().depth;
                mode = Mode::Key;
              }
            }
          } else if (c == ']' && inArray()) {
            ++i_;
            stack_.pop_back();
            mode = Mode::AfterValue;
          } else {
            const size_t start = i_;
            while (i_ < t_.size() &&
                   std::string_view(",]}#\n\r \t").find(t_[i_]) == std::string_view::npos)
              ++i_;
            if (i_ == start) ++i_;
            mode = Mode::AfterValue;
          }
          break;
        }
        case Mode::AfterValue: {
          skipBlank(inArray());
          if (i_ >= t_.size()) break;
          const char c = t_[i_];
          if (stack_.empty()) {
            skipLine();
            mode = Mode::LineStart;
          } else if (c == ',') {
            ++i_;
            if (inArray()) {
              valueDepth = stack_.back().depth;
              mode = Mode::Value;
            } else {
              keyBase = stack_.back().depth;
              mode = Mode::Key;
            }
          } else if ((c == ']' && inArray()) || (c == '}' && !inArray())) {
            ++i_;
            stack_.pop_back();
          } else {
            ++i_;  // not TOML; toml++ says so
          }
          break;
        }
      }
    }
    if (!found_) return std::nullopt;
    return found_;
  }

 private:
  bool inArray() const { return !stack_.empty() && stack_.back().array; }

  void push(bool array, int depth) {
    stack_.push_back({array, depth});
    deeper(depth, i_);
  }

  // Notes the first place (the byte at `at`) deeper than the limit.
  void deeper(int depth, size_t at) {
    if (depth <= limit_ || found_) return;
    TooDeep d;
    d.depth = depth;
    for (size_t k = 0; k < at && k < t_.size(); ++k) {
      if (t_[k] == '\n') {
        ++d.line;
        d.column = 1;
      } else {
        ++d.column;
      }
    }
    found_ = d;
  }

  // A key (dotted or not) from i_; returns its segments, each counted from `base`.
  int key(int base) {
    int segments = 0;
    for (;;) {
      skipSpaces();
      if (i_ >= t_.size()) break;
      const size_t start = i_;
      const char c = t_[i_];
      if (c == '"' || c == '\'') {
        i_ = endOfTomlString(t_, i_);
      } else if (isBareKeyChar(c)) {
        while (i_ < t_.size() && isBareKeyChar(t_[i_])) ++i_;
      } else {
        break;
      }
      deeper(base + ++segments, start);
      if (found_) break;
      skipSpaces();
      if (i_ < t_.size() && t_[i_] == '.') {
        ++i_;
        continue;
      }
      break;
    }
    return segments;
  }

  void skipSpaces() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t')) ++i_;
  }

  // Spaces; with `lines`, also line ends and comments (between array elements).
  void skipBlank(bool lines) {
    for (;;) {
      skipSpaces();
      if (!lines || i_ >= t_.size()) return;
      if (t_[i_] == '\n' || t_[i_] == '\r') {
        ++i_;
      } else if (t_[i_] == '#') {
        skipLine();
      } else {
        return;
      }
    }
  }

  // To the start of the next line, through strings (a header's quoted key may hold '#').
  void skipLine() {
    while (i_ < t_.size() && t_[i_] != '\n') {
      if (t_[i_] == '#') {
        while (i_ < t_.size() && t_[i_] != '\n') ++i_;
        break;
      }
      if (t_[i_] == '"' || t_[i_] == '\'')
        i_ = endOfTomlString(t_, i_);
      else
        ++i_;
    }
    if (i_ < t_.size()) ++i_;
  }

  struct Frame {
    bool array;
    int depth;
  };

  std::string_view t_;
  int limit_;
  std::vector<size_t>* headers_;  // where each header begins, when asked
  size_t i_ = 0;
  int header_ = 0;
  std::vector<Frame> stack_;
  std::optional<TooDeep> found_;
};

}  // namespace

std::optional<TooDeep> tooDeep(std::string_view text, int limit, std::vector<size_t>* headers) {
  return Scan(text, limit, headers).run();
}

}  // namespace mesh::decl
