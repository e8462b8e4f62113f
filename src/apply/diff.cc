// The line diff behind plan's diffs, computed the way GNU diff computes it, so
// that the output is what `diff -u` prints (tests/unit/apply/diff_test.cc holds
// it to that, with /usr/bin/diff as the oracle):
//  1. only the lines between the common prefix and suffix, and 3 of each, are
//     looked at; each gets an equivalence class (equal bytes, including the
//     final newline or its absence, give equal classes);
//  2. lines that cannot match are set aside as changed (discardable());
//  3. Myers' linear-space O(ND) search for the middle snake finds a shortest
//     edit script over the rest (E. Myers, "An O(ND) Difference Algorithm and Its
//     Variations", 1986), within a bound on its work;
//  4. runs of changes are slid over equal lines to merge with their neighbours
//     or, failing that, to end as late as possible (shiftBoundaries());
//  5. changes less than 2×3+1 lines apart share a hunk with 3 lines of context.
#include "apply/diff.hh"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace mesh::apply {

namespace {

constexpr size_t kMaxDiffBytes = 1 << 20;
constexpr ptrdiff_t kContext = 3;
// Steps of the search (diagonals extended plus lines compared) one diff may take.
// Its cost grows with lines × changes: thousands of lines with thousands of
// changes among them run out of it, in well under a second, and are summarised.
constexpr uint64_t kMaxWork = 20'000'000;

bool looksBinary(std::string_view s) {
  return s.find('\0') != std::string_view::npos;
}

// Lines with their '\n'; the last one has none when the text does not end in one.
std::vector<std::string_view> splitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const size_t len = nl == std::string_view::npos ? text.size() : nl + 1;
    lines.push_back(text.substr(0, len));
    text.remove_prefix(len);
  }
  return lines;
}

// One side of the diff: the lines of one file the search looks at.
struct Side {
  Side(const std::vector<std::string_view>& all, ptrdiff_t from, ptrdiff_t to)
      : lines(all.begin() + from, all.begin() + to) {}
  std::vector<std::string_view> lines;
  std::vector<int> equivs;  // equivalence class of each line
  // changed()[i]: line i is deleted (old side) or inserted (new side). Indexes -1,
  // size() and size() + 1 are valid and stay 0, as the scans below rely on.
  std::vector<char> changedSpace;
  char* changed() { return changedSpace.data() + 1; }
  ptrdiff_t size() const { return static_cast<ptrdiff_t>(lines.size()); }
};

// Myers' search over two sequences of equivalence classes; marks what it
// finds deleted in `xChanged` and inserted in `yChanged` (diffutils' diffseq.h,
// without its heuristics for speed over minimality).
class Search {
 public:
  Search(const std::vector<int>& x, const std::vector<int>& y)
      : xChanged(x.size()),
        yChanged(y.size()),
        x_(x),
        y_(y),
        fdSpace_(x.size() + y.size() + 3),
        bdSpace_(x.size() + y.size() + 3) {
    // Diagonal k = x - y ranges over [-(|y| + 1), |x| + 1].
    fd_ = fdSpace_.data() + y.size() + 1;
    bd_ = bdSpace_.data() + y.size() + 1;
  }

  // false when the work bound ran out before the edit script was complete.
  bool run() { return compare(0, size(x_), 0, size(y_)); }

  std::vector<char> xChanged, yChanged;

 private:
  static ptrdiff_t size(const std::vector<int>& v) { return static_cast<ptrdiff_t>(v.size()); }

  bool compare(ptrdiff_t xoff, ptrdiff_t xlim, ptrdiff_t yoff, ptrdiff_t ylim) {
    while (xoff < xlim && yoff < ylim && x_[xoff] == y_[yoff]) ++xoff, ++yoff, ++work_;
    while (xoff < xlim && yoff < ylim && x_[xlim - 1] == y_[ylim - 1]) --xlim, --ylim, ++work_;
    if (xoff == xlim) {
      std::fill(yChanged.begin() + yoff, yChanged.begin() + ylim, 1);
    } else if (yoff == ylim) {
      std::fill(xChanged.begin() + xoff, xChanged.begin() + xlim, 1);
    } else {
      ptrdiff_t xmid = 0, ymid = 0;
      if (!middleSnake(xoff, xlim, yoff, ylim, xmid, ymid)) return false;
      if (!compare(xoff, xmid, yoff, ymid)) return false;
      if (!compare(xmid, xlim, ymid, ylim)) return false;
    }
    return true;
  }

  // Runs the search forward from (xoff, yoff) and backward from (xlim, ylim),
  // one edit step at a time each, until they overlap on a diagonal: that point
  // lies on a shortest edit script and splits the problem in two.
  bool middleSnake(ptrdiff_t xoff, ptrdiff_t xlim, ptrdiff_t yoff, ptrdiff_t ylim, ptrdiff_t& xmid,
                   ptrdiff_t& ymid) {
    constexpr ptrdiff_t kMax = PTRDIFF_MAX;
    const ptrdiff_t dmin = xoff - ylim, dmax = xlim - yoff;
    const ptrdiff_t fmid = xoff - yoff, bmid = xlim - ylim;
    ptrdiff_t fmin = fmid, fmax = fmid, bmin = bmid, bmax = bmid;
    const bool odd = (fmid - bmid) & 1;
    fd_[fmid] = xoff;
    bd_[bmid] = xlim;
    for (;;) {
      // Forward: one more edit on every diagonal in reach.
      if (fmin > dmin)
        fd_[--fmin - 1] = -1;
      else
        ++fmin;
      if (fmax < dmax)
        fd_[++fmax + 1] = -1;
      else
        --fmax;
      for (ptrdiff_t d = fmax; d >= fmin; d -= 2) {
        const ptrdiff_t lo = fd_[d - 1], hi = fd_[d + 1];
        ptrdiff_t x = lo < hi ? hi : lo + 1;
        ptrdiff_t y = x - d;
        const ptrdiff_t x0 = x;
        while (x < xlim && y < ylim && x_[x] == y_[y]) ++x, ++y;
        work_ += 1 + static_cast<uint64_t>(x - x0);
        fd_[d] = x;
        if (odd && bmin <= d && d <= bmax && bd_[d] <= x) {
          xmid = x;
          ymid = y;
          return true;
        }
      }
      // Backward, the same from the other corner.
      if (bmin > dmin)
        bd_[--bmin - 1] = kMax;
      else
        ++bmin;
      if (bmax < dmax)
        bd_[++bmax + 1] = kMax;
      else
        --bmax;
      for (ptrdiff_t d = bmax; d >= bmin; d -= 2) {
        const ptrdiff_t lo = bd_[d - 1], hi = bd_[d + 1];
        ptrdiff_t x = lo < hi ? lo : hi - 1;
        ptrdiff_t y = x - d;
        const ptrdiff_t x0 = x;
        while (xoff < x && yoff < y && x_[x - 1] == y_[y - 1]) --x, --y;
        work_ += 1 + static_cast<uint64_t>(x0 - x);
        bd_[d] = x;
        if (!odd && fmin <= d && d <= fmax && x <= fd_[d]) {
          xmid = x;
          ymid = y;
          return true;
        }
      }
      if (work_ > kMaxWork) return false;
    }
  }

  const std::vector<int>& x_;
  const std::vector<int>& y_;
  std::vector<ptrdiff_t> fdSpace_, bdSpace_;
  ptrdiff_t* fd_;  // furthest x reached on each diagonal, forward
  ptrdiff_t* bd_;  // and backward
  uint64_t work_ = 0;
};

// The lines of `s` the search leaves out, as changed for certain (diff's
// discard_confusing_lines): 1 for those that match no line of the other side;
// and lines that match very many (blank lines, braces) inside a run of those,
// except where they make up much of the run, form long stretches of it or stand
// near its ends. Left in, such lines would tie the two sides together at
// random points of a rewritten stretch; left out, the search is cheaper too.
std::vector<char> discardable(const Side& s, const std::vector<int>& otherCount) {
  const ptrdiff_t end = s.size();
  std::vector<char> discards(static_cast<size_t>(end));
  // "Very many": 5 × about the square root of the number of lines / 64.
  ptrdiff_t many = 5;
  for (ptrdiff_t tem = end / 64; (tem >>= 2) > 0;) many *= 2;
  for (ptrdiff_t i = 0; i < end; ++i) {
    const int matches = otherCount[s.equivs[i]];
    if (matches == 0)
      discards[i] = 1;
    else if (matches > many)
      discards[i] = 2;  // provisionally
  }
  for (ptrdiff_t i = 0; i < end; ++i) {
    if (discards[i] == 2) {  // not inside a run that starts with a certain one
      discards[i] = 0;
      continue;
    }
    if (discards[i] == 0) continue;
    // A run of discardable lines: its end, less provisional ones there.
    ptrdiff_t j = i, provisional = 0;
    for (; j < end && discards[j] != 0; ++j)
      if (discards[j] == 2) ++provisional;
    while (j > i && discards[j - 1] == 2) discards[--j] = 0, --provisional;
    const ptrdiff_t length = j - i;
    if (provisional * 4 > length) {
      // A quarter of the run or more: keep them all.
      while (j > i)
        if (discards[--j] == 2) discards[j] = 0;
      continue;
    }
    // Keep every stretch of `minimum` or more provisional lines, about
    // sqrt(length / 4) + 1 …
    ptrdiff_t minimum = 1;
    for (ptrdiff_t tem = length >> 2; (tem >>= 2) > 0;) minimum <<= 1;
    ++minimum;
    for (ptrdiff_t k = 0, consec = 0; k < length; ++k) {
      if (discards[i + k] != 2)
        consec = 0;
      else if (minimum == ++consec)
        k -= consec;  // back to the stretch's start, to keep all of it
      else if (minimum < consec)
        discards[i + k] = 0;
    }
    // … and those before 3 certain lines in a row or the first certain one 8
    // lines in, from either end.
    for (ptrdiff_t k = 0, consec = 0; k < length; ++k) {
      if (k >= 8 && discards[i + k] == 1) break;
      if (discards[i + k] == 2)
        consec = 0, discards[i + k] = 0;
      else if (discards[i + k] == 0)
        consec = 0;
      else
        ++consec;
      if (consec == 3) break;
    }
    i += length - 1;
    for (ptrdiff_t k = 0, consec = 0; k < length; ++k) {
      if (k >= 8 && discards[i - k] == 1) break;
      if (discards[i - k] == 2)
        consec = 0, discards[i - k] = 0;
      else if (discards[i - k] == 0)
        consec = 0;
      else
        ++consec;
      if (consec == 3) break;
    }
  }
  return discards;
}

// Marks the changed lines of both sides; false when that costs too much.
bool findChanges(Side& a, Side& b) {
  std::unordered_map<std::string_view, int> classes;
  for (Side* s : {&a, &b}) {
    s->equivs.reserve(s->lines.size());
    for (auto line : s->lines)
      s->equivs.push_back(classes.emplace(line, static_cast<int>(classes.size())).first->second);
    s->changedSpace.assign(s->lines.size() + 3, 0);
  }
  // The search runs over the lines not set aside, and its findings are mapped back.
  std::vector<int> count[2] = {std::vector<int>(classes.size()), std::vector<int>(classes.size())};
  for (int c : a.equivs) ++count[0][c];
  for (int c : b.equivs) ++count[1][c];
  std::vector<int> kept[2];
  std::vector<ptrdiff_t> realIndex[2];
  Side* sides[2] = {&a, &b};
  for (int f = 0; f < 2; ++f) {
    Side& s = *sides[f];
    const auto discards = discardable(s, count[1 - f]);
    for (ptrdiff_t i = 0; i < s.size(); ++i) {
      if (discards[i]) {
        s.changed()[i] = 1;
      } else {
        kept[f].push_back(s.equivs[i]);
        realIndex[f].push_back(i);
      }
    }
  }
  Search search(kept[0], kept[1]);
  if (!search.run()) return false;
  for (size_t j = 0; j < search.xChanged.size(); ++j)
    if (search.xChanged[j]) a.changed()[realIndex[0][j]] = 1;
  for (size_t j = 0; j < search.yChanged.size(); ++j)
    if (search.yChanged[j]) b.changed()[realIndex[1][j]] = 1;
  return true;
}

// A run of changed lines that has an equal line just outside it at one end and
// one of its own lines equal to it at the other end could as well be shown one
// line further along. Slide each run to join its neighbours where it can, and
// otherwise as far down as it goes, but back to where the other side changes
// when it passed such a point (diffutils' analyze.c shift_boundaries).
void shiftBoundaries(Side& side, Side& other) {
  char* changed = side.changed();
  const char* otherChanged = other.changed();
  const auto& equivs = side.equivs;
  const ptrdiff_t end = side.size();
  ptrdiff_t i = 0, j = 0;
  for (;;) {
    // The start of the next run, and the corresponding point in the other file.
    while (i < end && !changed[i]) {
      while (otherChanged[j++]) {
      }
      ++i;
    }
    if (i == end) break;
    ptrdiff_t start = i;
    while (changed[++i]) {
    }
    while (otherChanged[j]) ++j;
    ptrdiff_t runLength = 0, corresponding = 0;
    do {
      runLength = i - start;
      // Up, while the line before the run equals its last line: merges with
      // a run above.
      while (start && equivs[start - 1] == equivs[i - 1]) {
        changed[--start] = 1;
        changed[--i] = 0;
        while (changed[start - 1]) --start;
        while (otherChanged[--j]) {
        }
      }
      // The end of the run where it last met a change of the other file.
      corresponding = otherChanged[j - 1] ? i : end;
      // Down, while its first line equals the line after it: merges with a
      // run below, or moves as far down as it can.
      while (i != end && equivs[start] == equivs[i]) {
        changed[start++] = 0;
        changed[i++] = 1;
        while (changed[i]) ++i;
        while (otherChanged[++j]) corresponding = i;
      }
    } while (runLength != i - start);
    // Back up to where it corresponds to a change of the other file.
    while (corresponding < i) {
      changed[--start] = 1;
      changed[--i] = 0;
      while (otherChanged[--j]) {
      }
    }
  }
}

struct Change {
  ptrdiff_t line0, deleted, line1, inserted;
};

std::vector<Change> changesOf(Side& a, Side& b) {
  std::vector<Change> out;
  const char* c0 = a.changed();
  const char* c1 = b.changed();
  for (ptrdiff_t i = 0, j = 0; i < a.size() || j < b.size(); ++i, ++j) {
    if (!c0[i] && !c1[j]) continue;
    Change c{i, 0, j, 0};
    while (c0[i]) ++i;
    while (c1[j]) ++j;
    c.deleted = i - c.line0;
    c.inserted = j - c.line1;
    out.push_back(c);
  }
  return out;
}

// "start,count" as diff prints a range: 1-based; a one-line range is just its
// line; an empty one is "the line before,0".
std::string range(ptrdiff_t first, ptrdiff_t count) {
  if (count == 0) return fmt::format("{},0", first);
  if (count == 1) return fmt::format("{}", first + 1);
  return fmt::format("{},{}", first + 1, count);
}

void line(std::string& out, char mark, std::string_view text) {
  out += mark;
  out += text;
  if (text.empty() || text.back() != '\n') out += "\n\\ No newline at end of file\n";
}

}  // namespace

std::string unifiedDiff(std::optional<std::string_view> oldContent, std::string_view newContent,
                        const std::string& label) {
  const std::string_view old = oldContent.value_or(std::string_view());
  if (old.size() > kMaxDiffBytes || newContent.size() > kMaxDiffBytes)
    return fmt::format("(content differs: {} → {} bytes; too large to show)\n", old.size(),
                       newContent.size());
  if (looksBinary(old) || looksBinary(newContent))
    return fmt::format("(binary content differs: {} → {} bytes)\n", old.size(), newContent.size());
  if (old == newContent) return {};

  const auto linesA = splitLines(old), linesB = splitLines(newContent);
  const auto sizeA = static_cast<ptrdiff_t>(linesA.size());
  const auto sizeB = static_cast<ptrdiff_t>(linesB.size());
  // Like diff, look only at the lines between the common prefix and suffix
  // and at a context's worth of each: a search or a sliding run of changes
  // then has the same room, and makes the same choices, as diff's.
  ptrdiff_t prefix = 0, suffix = 0;
  while (prefix < std::min(sizeA, sizeB) && linesA[prefix] == linesB[prefix]) ++prefix;
  while (suffix < std::min(sizeA, sizeB) - prefix &&
         linesA[sizeA - 1 - suffix] == linesB[sizeB - 1 - suffix])
    ++suffix;
  const ptrdiff_t from = std::max<ptrdiff_t>(prefix - kContext, 0);
  const ptrdiff_t skippedEnd = std::max<ptrdiff_t>(suffix - kContext, 0);
  Side a(linesA, from, sizeA - skippedEnd), b(linesB, from, sizeB - skippedEnd);
  if (!findChanges(a, b))
    return fmt::format("(content differs: {} → {} lines; too large to show)\n", sizeA, sizeB);
  shiftBoundaries(a, b);
  shiftBoundaries(b, a);
  auto changes = changesOf(a, b);
  for (auto& c : changes) c.line0 += from, c.line1 += from;

  std::string out = fmt::format("--- {}\n+++ b{}\n", oldContent ? "a" + label : "/dev/null", label);
  for (size_t h = 0; h < changes.size();) {
    // A hunk: changes less than 2×context+1 equal lines apart.
    size_t last = h;
    while (last + 1 < changes.size() &&
           changes[last + 1].line0 - (changes[last].line0 + changes[last].deleted) <
               2 * kContext + 1)
      ++last;
    const Change& first = changes[h];
    const Change& end = changes[last];
    const ptrdiff_t first0 = std::max<ptrdiff_t>(first.line0 - kContext, 0);
    const ptrdiff_t first1 = std::max<ptrdiff_t>(first.line1 - kContext, 0);
    const ptrdiff_t end0 = std::min(end.line0 + end.deleted + kContext, sizeA);
    const ptrdiff_t end1 = std::min(end.line1 + end.inserted + kContext, sizeB);
    out +=
        fmt::format("@@ -{} +{} @@\n", range(first0, end0 - first0), range(first1, end1 - first1));
    ptrdiff_t i = first0;
    for (size_t k = h; k <= last; ++k) {
      const Change& c = changes[k];
      for (; i < c.line0; ++i) line(out, ' ', linesA[i]);
      for (ptrdiff_t d = 0; d < c.deleted; ++d) line(out, '-', linesA[c.line0 + d]);
      for (ptrdiff_t n = 0; n < c.inserted; ++n) line(out, '+', linesB[c.line1 + n]);
      i = c.line0 + c.deleted;
    }
    for (; i < end0; ++i) line(out, ' ', linesA[i]);
    h = last + 1;
  }
  return out;
}

}  // namespace mesh::apply
