// The walk over a declaration's TOML: top level, modules, kinds, resources.
// Each resource table is read by kinds.cc; checks across resources and the
// apply order follow once every table has been read, so one run reports
// every error it can find.
#include "decl/parse.hh"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <tuple>

#include "decl/accounts.hh"
#include "decl/compiled.hh"
#include "decl/depth.hh"
#include "decl/fields.hh"
#include "decl/kind_info.hh"
#include "decl/kinds.hh"
#include "decl/order.hh"
#include "decl/pieces.hh"
#include "decl/toml_lex.hh"
#include "decl/validate.hh"
#include "decl/want.hh"
#include "util/accounts.hh"
#include "util/error.hh"
#include "util/fd.hh"
#include "util/fs.hh"

namespace mesh::decl {

namespace {

constexpr std::string_view kNameRule = "use letters, digits, '_' and '-'";

// toml++ says "Error while parsing <thing>: <what>"; lead with the what.
std::string syntaxMessage(const toml::parse_error& e) {
  std::string text(e.description());
  constexpr std::string_view prefix = "Error while parsing ";
  if (auto colon = text.find(": "); text.starts_with(prefix) && colon != std::string::npos)
    text = fmt::format("{} (while parsing {})", text.substr(colon + 2),
                       text.substr(prefix.size(), colon - prefix.size()));
  if (text.find("redefine") != std::string::npos)
    return text +
           "; a resource [module.<module>.<kind>.<name>] and each key in it may be "
           "declared only once: merge the two or rename one";
  return text + "; fix the TOML syntax";
}

class Walker {
 public:
  Walker(Diagnostics& diags, const ParseOptions& options) : diags_(diags), options_(options) {}

  // Reads the top-level keys (node, serial, empty) into `decl` and walks the modules.
  void root(const toml::table& root, Declaration& decl);
  // Reads the `module` table of a piece (decl/pieces.hh), after root() read the top.
  void resources(const toml::node& module) { modules(module); }
  // Room for `n` resources, read a piece at a time.
  void expect(size_t n) { drafts_.reserve(n); }
  Drafts takeDrafts() { return std::move(drafts_); }
  // Where `empty` was written, when it was.
  const std::optional<Position>& emptyPos() const { return emptyPos_; }

 private:
  Position at(const toml::source_region& source) const { return positionOf(diags_, source); }
  void modules(const toml::node& node);
  void module(const std::string& module, const toml::table& table);
  void kind(const std::string& module, Kind kind, const toml::table& table);

  // Reads the top-level `cluster` into options_.cluster (what {cluster} stands for).
  void cluster(Fields& top, const toml::table& root);

  Diagnostics& diags_;
  ParseOptions options_;  // a copy: the declared cluster completes it
  Drafts drafts_;
  std::optional<Position> emptyPos_;
};

void Walker::root(const toml::table& root, Declaration& decl) {
  Fields top(root, diags_.at(1, 1), "the top level", diags_);
  top.rejectUnknown({"node", "module", "serial", "empty", "cluster"});
  std::optional<std::string> node = top.string("node", Text::Line);
  if (node && *node != options_.node) {
    std::string here = options_.node.empty() ? "no --node was given"
                                             : fmt::format("this is node '{}'", options_.node);
    top.error(top.at(*root.get("node")),
              fmt::format("declaration is for node '{}' but {} (--node); apply it on node '{}' "
                          "or change 'node'",
                          shown(*node), here, shown(*node)));
  }
  decl.node = node;
  cluster(top, root);
  if (const toml::node* s = root.get("serial")) {
    // The replay guard compares serials (docs/trust.md); 0 is the lowest.
    const auto* i = s->as_integer();
    if (!i)
      top.error(top.at(*s), fmt::format("serial is {}; it must be an integer of 0 or more, e.g. "
                                        "serial = 7",
                                        typeName(s->type())));
    else if (i->get() < 0)
      top.error(top.at(*s),
                fmt::format("serial is {}; it must be an integer of 0 or more", i->get()));
    else
      decl.serial = i->get();
  }
  if (const toml::node* e = root.get("empty")) {
    emptyPos_ = top.at(*e);
    if (auto empty = top.boolean("empty")) decl.empty = *empty;
  }
  if (const toml::node* m = root.get("module")) modules(*m);
}

void Walker::cluster(Fields& top, const toml::table& root) {
  const toml::node* n = root.get("cluster");
  if (!n) return;
  auto declared = top.string("cluster", Text::Line);
  if (!declared) return;
  const bool valid = declared->size() <= 128 && *declared != "." && *declared != ".." &&
                     declared->find_first_not_of(
                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU"
                         "VWXYZ0123456789._@-") == std::string::npos;
  if (!valid) {
    top.error(top.at(*n), fmt::format("cluster '{}' is not a cluster name: 1 to 128 of A-Z a-z "
                                      "0-9 . _ @ - (not . or ..)",
                                      shown(*declared)));
  } else if (options_.cluster && *options_.cluster != *declared) {
    top.error(top.at(*n),
              fmt::format("declaration is for cluster '{}' but this is cluster '{}' (--cluster); "
                          "push it to cluster '{}' or change 'cluster'",
                          *declared, *options_.cluster, *declared));
  } else {
    options_.cluster = *declared;
  }
}

// No resources is "remove everything mesh-host manages here", so it must be
// asked for: an emptied file (`: > declaration.toml`, a failed template, a
// truncated copy) would otherwise stop every service and delete every file.
void checkEmpty(const Declaration& decl, size_t resources, const std::optional<Position>& emptyPos,
                Diagnostics& diags) {
  if (decl.empty && resources > 0) {
    diags.error(*emptyPos, fmt::format("empty = true but {} resource{} declared; remove "
                                       "`empty = true` to apply {}, or remove {}",
                                       resources, resources == 1 ? " is" : "s are",
                                       resources == 1 ? "it" : "them",
                                       resources == 1 ? "the resource" : "the resources"));
  } else if (!decl.empty && resources == 0 && diags.empty()) {
    // (With other errors, those say what went wrong; this would only add noise.)
    diags.error(diags.at(0, 0),
                fmt::format("declaration {} declares no resources; an empty declaration would "
                            "remove everything mesh-host manages on this node: write "
                            "`empty = true` if that is what you want",
                            diags.file()));
  }
}

void Walker::modules(const toml::node& node) {
  const auto* table = node.as_table();
  if (!table) {
    diags_.error(at(node.source()),
                 fmt::format("'module' must be a table, not {}; declare resources as "
                             "[module.<module>.<kind>.<name>] tables",
                             typeName(node.type())));
    return;
  }
  // Room for every resource at once: grown by doubling, 100,000 drafts held the
  // old and the new array together (71 MiB at the peak of a first apply).
  size_t resources = 0;
  for (auto&& [key, value] : *table)
    if (const auto* m = value.as_table())
      for (auto&& [k, kindValue] : *m)
        if (const auto* t = kindValue.as_table()) resources += t->size();
  if (drafts_.resources.capacity() < drafts_.size() + resources)
    drafts_.reserve(drafts_.size() + resources);
  for (auto&& [key, value] : *table) {
    std::string name(key.str());
    if (!validName(name)) {
      diags_.error(at(key.source()),
                   fmt::format("invalid module name '{}'; {}", shown(name), kNameRule));
    } else if (const auto* moduleTable = value.as_table()) {
      module(name, *moduleTable);
    } else {
      diags_.error(at(value.source()),
                   fmt::format("module '{}' must be a table of resource kinds, not {}; declare "
                               "resources as [module.{}.<kind>.<name>] tables",
                               name, typeName(value.type()), name));
    }
  }
}

void Walker::module(const std::string& module, const toml::table& table) {
  for (auto&& [key, value] : table) {
    auto kindOf = kindFromName(key.str());
    if (!kindOf) {
      diags_.error(at(key.source()),
                   fmt::format("unknown key '{}' in module {}; allowed keys (resource kinds): {}",
                               shown(key.str()), module, kindList()));
    } else if (const auto* kindTable = value.as_table()) {
      kind(module, *kindOf, *kindTable);
    } else {
      diags_.error(at(value.source()),
                   fmt::format("'{}' in module {} must be a table of resources, not {}; declare "
                               "them as [module.{}.{}.<name>] tables",
                               key.str(), module, typeName(value.type()), module, key.str()));
    }
  }
}

void Walker::kind(const std::string& module, Kind kind, const toml::table& table) {
  for (auto&& [key, value] : table) {
    std::string name(key.str());
    if (!validName(name)) {
      diags_.error(at(key.source()), fmt::format("invalid resource name '{}' in module {}; {}",
                                                 shown(name), module, kNameRule));
      continue;
    }
    const auto* resource = value.as_table();
    if (!resource) {
      diags_.error(at(value.source()),
                   fmt::format("{} {}.{} must be a table, not {}; write [module.{}.{}.{}] with "
                               "its keys below it",
                               kindName(kind), module, name, typeName(value.type()), module,
                               kindName(kind), name));
      continue;
    }
    // An inline table's "{" is less telling than its name.
    Position pos = resource->is_inline() ? at(key.source()) : at(resource->source());
    drafts_.push(readResource({module, name, kind, pos}, *resource, diags_, options_));
  }
}

// What the walk over the TOML produced, before the checks across resources.
struct Walked {
  Diagnostics diags;
  Declaration decl;
  Drafts drafts;
  std::optional<Position> emptyPos;
};

// Each table of a piece: one key, down to the resource's table.
bool oneResource(const toml::table& piece) {
  const toml::table* at = &piece;
  for (int level = 0; level < 4; ++level) {
    if (at->size() != 1) return false;
    at = at->cbegin()->second.as_table();
    if (!at) return false;
  }
  return true;
}

// The walk one resource at a time (decl/pieces.hh): the document of one is gone
// before the next is parsed. nullopt: the text is not of the plain shape, or a
// piece is broken — parsed whole, toml++ names the error as it always has.
std::optional<Walked> walkInPieces(std::string_view text, const std::string& source,
                                   const std::vector<size_t>& headers,
                                   const ParseOptions& options) {
  auto pieces = resourcePieces(text, headers);
  if (!pieces) return std::nullopt;
  Walked out{Diagnostics(source), {}, {}, {}};
  Walker walker(out.diags, options);
  walker.expect(pieces->resources.size());
  try {
    {
      const toml::table top =
          toml::parse(text.substr(pieces->top.begin, pieces->top.end - pieces->top.begin), source);
      if (top.contains("module")) return std::nullopt;
      walker.root(top, out.decl);
    }
    for (const Piece& piece : pieces->resources) {
      const toml::table table =
          toml::parse(text.substr(piece.begin, piece.end - piece.begin), source);
      if (!oneResource(table)) return std::nullopt;
      out.diags.pieceAt(piece.line);
      walker.resources(*table.get("module"));
    }
  } catch (const toml::parse_error&) {
    return std::nullopt;
  }
  out.diags.pieceAt(1);
  out.drafts = walker.takeDrafts();
  out.emptyPos = walker.emptyPos();
  return out;
}

// The walk over the document parsed whole.
Walked walkWhole(std::string_view text, const std::string& source, const ParseOptions& options) {
  Walked out{Diagnostics(source), {}, {}, {}};
  toml::table root;
  try {
    root = toml::parse(text, std::string_view(source));
  } catch (const toml::parse_error& e) {
    out.diags.error(positionOf(out.diags, e.source()), syntaxMessage(e));
    out.diags.throwIfAny();
  }
  Walker walker(out.diags, options);
  walker.root(root, out.decl);
  out.drafts = walker.takeDrafts();
  out.emptyPos = walker.emptyPos();
  return out;
}

// The declaration of `text`, its text left for the caller to give it.
Declaration parseWithoutText(std::string_view text, const std::string& source,
                             const ParseOptions& options) {
  Diagnostics check(source);
  // toml++ recurses once per level it builds: deep input would overflow the stack.
  std::vector<size_t> headers;
  if (auto deep = tooDeep(text, kMaxNesting, &headers)) {
    check.error(check.at(deep->line, deep->column),
                fmt::format("keys, tables and values nest {} levels deep here; at most {} are "
                            "allowed (a resource needs 4: [module.<module>.<kind>.<name>])",
                            deep->depth, kMaxNesting));
    check.throwIfAny();
  }
  // toml++ reaches undefined behaviour on some of these (toml_lex.hh). The character is
  // named by its code point, never printed: it may be a control or a bidi override.
  if (auto odd = notAsciiOutsideStrings(text)) {
    const std::string what =
        odd->codepoint == 0
            ? fmt::format("byte \\x{:02x} (not UTF-8)", static_cast<unsigned char>(odd->bytes[0]))
            : fmt::format("U+{:04X}", static_cast<uint32_t>(odd->codepoint));
    check.error(check.at(odd->line, odd->column),
                fmt::format("{} outside a quoted string: TOML allows only ASCII in keys, table "
                            "headers and bare values (quote the key, as in \"name\" = ..., or "
                            "the value)",
                            what));
    check.throwIfAny();
  }
  std::optional<Walked> walked;
  if (options.inPieces) walked = walkInPieces(text, source, headers, options);
  if (!walked) walked.emplace(walkWhole(text, source, options));
  Diagnostics& diags = walked->diags;
  Declaration& decl = walked->decl;
  Drafts& drafts = walked->drafts;
  decl.source = source;
  decl.baseDir = options.baseDir;
  decl.digest = Digest::ofBytes(text);
  checkEmpty(decl, drafts.size(), walked->emptyPos, diags);
  inTextualOrder(drafts);
  checkAccounts(drafts, diags, options);
  checkAcross(drafts, diags, options.stateDir);
  drafts.sides = {};  // checked: what the resources keep is theirs now
  decl.resources = applyOrder(std::move(drafts.resources), diags);
  diags.throwIfAny();
  for (auto& r : decl.resources) r.want = specWant(r);
  return std::move(decl);
}

}  // namespace

Declaration parseDeclaration(std::string_view text, const std::string& source,
                             const ParseOptions& options) {
  Declaration decl = parseWithoutText(text, source, options);
  // Copied last, when the drafts are gone: their memory serves.
  decl.text = std::string(text);
  return decl;
}

namespace {

// Users and groups are looked up on this node (util/accounts.hh, through the C
// library) unless the caller says otherwise.
void onThisNode(ParseOptions& options) {
  static const Accounts node("/");
  if (!options.userExists)
    options.userExists = [](const std::string& name) { return node.uid(name).has_value(); };
  if (!options.groupExists)
    options.groupExists = [](const std::string& name) { return node.gid(name).has_value(); };
}

// The declaration's text, in a string of the file's size: grown by doubling as
// it is read, a 14 MB text (50,000 files) held a 16 MiB buffer, 24 MiB while
// it grew. nullopt when there is no such file.
std::optional<std::string> readText(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return std::nullopt;
    throwSys(fmt::format("cannot read {}", path));
  }
  std::string out;
  struct stat st {};
  // A file that grows meanwhile is read whole all the same (the string grows).
  if (::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
    out.reserve(static_cast<size_t>(st.st_size));
  readChunks(fd.get(), path, [&](std::string_view chunk) { out.append(chunk); });
  return out;
}

}  // namespace

Declaration loadDeclaration(const std::string& path, ParseOptions options) {
  std::optional<std::string> text;
  try {
    text = readText(path);
  } catch (const SysError& e) {
    throw InputError("cannot read declaration {}: {}", path, std::strerror(e.err()));
  }
  if (!text) throw InputError("cannot read declaration {}: {}", path, std::strerror(ENOENT));
  if (options.checkText) options.checkText(path, *text);

  if (options.baseDir.empty() || options.baseDir == ".") options.baseDir = parentOf(path);
  onThisNode(options);
  // The text read is the declaration's: moved, never copied (18 MB for 100,000 files).
  if (!options.compiled) {
    auto parsed = parseWithoutText(*text, path, options);
    parsed.text = std::move(*text);
    return parsed;
  }

  const Digest digest = Digest::ofBytes(*text);
  const std::string key = compiledKey(digest, path, options);
  std::optional<Declaration> d;
  options.compiled->read(key,
                         [&](const FormSource& form) { d = loadCompiled(form, digest, options); });
  if (d) {
    d->text = std::move(*text);
    return std::move(*d);
  }
  auto parsed = parseWithoutText(*text, path, options);
  options.compiled->missed(key);
  parsed.text = std::move(*text);
  return parsed;
}

Declaration parseOnThisNode(std::string_view text, const std::string& source,
                            ParseOptions options) {
  onThisNode(options);
  return parseDeclaration(text, source, options);
}

}  // namespace mesh::decl
