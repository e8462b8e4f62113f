// libcurl's functions mesh-host calls, loaded on first use (lazy_lib.hh).
#include <curl/curl.h>

#include <cstdarg>

#include "util/lazy/lazy_lib.hh"

namespace {
constexpr const char* kCurl = "libcurl.so.4";

template <typename F>
F* real(const char* name) {
  return reinterpret_cast<F*>(::mesh::lazy::symbol(kCurl, name));
}
}  // namespace

MESH_LAZY_FORWARD(kCurl, CURLcode, curl_global_init, (long flags), (flags))
MESH_LAZY_FORWARD(kCurl, CURL*, curl_easy_init, (void), ())
MESH_LAZY_FORWARD(kCurl, void, curl_easy_cleanup, (CURL * h), (h))
MESH_LAZY_FORWARD(kCurl, void, curl_easy_reset, (CURL * h), (h))
MESH_LAZY_FORWARD(kCurl, CURLcode, curl_easy_perform, (CURL * h), (h))
MESH_LAZY_FORWARD(kCurl, const char*, curl_easy_strerror, (CURLcode c), (c))
MESH_LAZY_FORWARD(kCurl, struct curl_slist*, curl_slist_append,
                  (struct curl_slist * list, const char* s), (list, s))
MESH_LAZY_FORWARD(kCurl, void, curl_slist_free_all, (struct curl_slist * list), (list))

// The two variadic ones take exactly one more argument, whose type the option says
// (curl.h: CURLOPTTYPE_* for an option, CURLINFO_* for an info, always a pointer).
// Their last named parameter is an enum, as curl.h declares them: clang warns that an
// enum undergoes promotion (-Wvarargs); va_start only needs to know where the named
// parameters end, which the signature fixes (an enum of int's size, passed as one).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wvarargs"
extern "C" CURLcode curl_easy_setopt(CURL* h, CURLoption option, ...) {
  using Fn = CURLcode(CURL*, CURLoption, ...);
  static auto* const f = real<Fn>("curl_easy_setopt");
  va_list ap;
  va_start(ap, option);
  CURLcode rc;
  if (option < CURLOPTTYPE_OBJECTPOINT)
    rc = f(h, option, va_arg(ap, long));
  else if (option < CURLOPTTYPE_OFF_T)  // object and function pointers alike
    rc = f(h, option, va_arg(ap, void*));
  else if (option < CURLOPTTYPE_BLOB)
    rc = f(h, option, va_arg(ap, curl_off_t));
  else
    rc = f(h, option, va_arg(ap, void*));
  va_end(ap);
  return rc;
}

extern "C" CURLcode curl_easy_getinfo(CURL* h, CURLINFO info, ...) {
  using Fn = CURLcode(CURL*, CURLINFO, ...);
  static auto* const f = real<Fn>("curl_easy_getinfo");
  va_list ap;
  va_start(ap, info);
  void* out = va_arg(ap, void*);
  va_end(ap);
  return f(h, info, out);
}
#pragma GCC diagnostic pop
