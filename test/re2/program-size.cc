// The oracle for src/routing/re2-check.ts: C++ RE2 judging regexes exactly as
// Envoy does (source/common/common/regex.cc, CompiledGoogleReMatcher):
// re2::RE2 re(pattern, RE2::Quiet), refused when !re.ok(), then ProgramSize()
// against re2.max_program_size.error_level.
//
// Input: one pattern per line, hex-encoded UTF-8 bytes (so a pattern may hold
// any byte, newlines and NUL included). Output: one line per input, in order:
//   ok <program size>
//   error <RE2 error code> <error text, bytes outside printable ASCII as \xHH>
// Built by scripts/re2-oracle.sh.

#include <re2/re2.h>

#include <cstdio>
#include <iostream>
#include <string>

namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool DecodeHex(const std::string& hex, std::string* out) {
  if (hex.size() % 2 != 0) return false;
  out->clear();
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = HexDigit(hex[i]), lo = HexDigit(hex[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
  }
  return true;
}

std::string Printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

}  // namespace

int main() {
  std::ios::sync_with_stdio(false);
  std::string line, pattern;
  while (std::getline(std::cin, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!DecodeHex(line, &pattern)) {
      std::cout << "error bad-input the line is not hex" << std::endl;
      continue;
    }
    // The same constructor and options as Envoy: everything else default.
    re2::RE2 re(pattern, re2::RE2::Quiet);
    if (!re.ok()) {
      std::cout << "error " << re.error_code() << ' ' << Printable(re.error()) << '\n';
    } else {
      std::cout << "ok " << re.ProgramSize() << '\n';
    }
    // One answer per line as it comes: a test may ask one pattern at a time.
    std::cout.flush();
  }
  return 0;
}
