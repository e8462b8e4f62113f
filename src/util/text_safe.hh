// Text from outside (service output, file names, etcd keys and values, STATUS=
// messages) on its way out of mesh-host: the one place that says what becomes of
// bytes that are not valid UTF-8, and of bytes a terminal would obey.
//
// JSON (docs/json.md, "Bytes that are not UTF-8"): every invalid UTF-8 sequence is
// replaced by U+FFFD (nlohmann's error_handler_t::replace); a JSON writer never
// throws on bytes. What mesh-host prints or serves also has DEL and the C1
// controls escaped (\u007f, \u0080 … \u009f), as JSON allows, so that no byte a
// terminal obeys is left raw in it even by a `jq -r`-less `cat`.
//
// Terminal text (docs/security.md): every control byte (C0, DEL, C1), every byte
// that is not part of valid UTF-8, and the Unicode controls that reorder or break
// lines are shown escaped: \n \r \t \e, \xHH for any other byte, \u{XXXX} for a
// bidi or line-separator character. A backslash stays a backslash: the escaped
// form is for eyes, JSON is the form to parse.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace mesh {

// JSON text to keep or sign (the state store, etcd values, status files): compact,
// invalid UTF-8 replaced. Identical to dump(indent) for valid UTF-8.
std::string jsonData(const nlohmann::json& j, int indent = -1);
std::string jsonData(const nlohmann::ordered_json& j, int indent = -1);

// JSON text to print, log or serve: jsonData's, with DEL and C1 controls escaped
// too. Parses to the same value as jsonData's.
std::string jsonOut(const nlohmann::json& j, int indent = -1);
std::string jsonOut(const nlohmann::ordered_json& j, int indent = -1);

// One string as the JSON string literal jsonOut writes for it (quotes included).
std::string jsonString(std::string_view s);

// `s` with its invalid UTF-8 replaced as the JSON writers replace it.
std::string validUtf8(std::string_view s);

// One line for a terminal or a log: nothing in it a terminal obeys, no line break.
std::string shownText(std::string_view s);
// Lines for a terminal (a diff, a multi-line message): as shownText, but '\n' and
// '\t' kept as they are.
std::string shownLines(std::string_view s);

// Whether `s` is printable ASCII only (shownText and jsonString leave it as it is).
bool plainText(std::string_view s);

}  // namespace mesh
