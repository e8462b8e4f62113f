// A compiled declaration: the parsed, validated and ordered model in a compact
// binary form, kept in the state store so that a declaration whose text has not
// changed is not parsed again. Parsing 5,000 resources of TOML costs far more
// than the no-op cycle over them; `apply`, `plan` and every restart of the agent
// would pay it each time.
//
// Trust comes from the key, never from the row: compiledKey() covers the text's
// digest, everything else parsing depends on (node, base directory, state
// directory, file name) and this very binary (its version and GNU build-id), so
// a different text or a rebuilt mesh-host misses and parses again. A form that
// does not decode to the letter (magic, format, a checksum of the whole payload,
// every length and enum in bounds) is nullopt, never a half-read model: the
// caller parses instead. Users and groups are looked up again on every load
// (ParseOptions), since they may have gone since the form was made.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "decl/model.hh"
#include "decl/parse.hh"

namespace mesh::decl {

// The key a compiled form of `textDigest`, loaded as `source` with `options`, is
// stored under: "sha256:…" over all of it and the binary's identity.
std::string compiledKey(const Digest& textDigest, const std::string& source,
                        const ParseOptions& options);

// The form of `d` (its text excluded: the caller holds the text).
std::string compileDeclaration(const Declaration& d);
// The same handed to `sink` in pieces of about 1 MiB, never held whole (22 MB at
// 100,000 files); returns its size. Given no sink, only the size (a FormWriter).
size_t compileDeclaration(const Declaration& d, const std::function<void(std::string_view)>& sink);

// The declaration back from `form` (its text left empty for the caller, who holds
// the text of digest `textDigest`); nullopt when the form is malformed or damaged,
// is of another text, or names a user or group that options say does not exist
// (parsing then says so properly).
std::optional<Declaration> loadCompiled(std::string_view form, const Digest& textDigest,
                                        const ParseOptions& options);
// The same, from a form read a piece at a time (only a piece held at once); its
// checksum (XXH3-128: against accidental damage; trust comes from the key) is
// checked as it is read, and a model decoded from a form whose sum is wrong is
// dropped (nullopt).
std::optional<Declaration> loadCompiled(const FormSource& form, const Digest& textDigest,
                                        const ParseOptions& options);

// This binary's identity as the key uses it: the version and the GNU build-id.
const std::string& binaryIdentity();

}  // namespace mesh::decl
