// The [security] key file: one 256-bit key as 64 hex characters, optionally a second accepted
// key; every kind of bad file refused with the file's name and the reason.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "dataplane/security/key_file.h"

using namespace tob::dataplane::security;

namespace {

const std::string kKeyA = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
const std::string kKeyB = "FFEEDDCCBBAA99887766554433221100ffeeddccbbaa99887766554433221100";

std::string write(const std::string& text) {
  static int n = 0;
  const std::string path = "/tmp/tob-key-test-" + std::to_string(::getpid()) + "-" + std::to_string(n++) + ".key";
  std::ofstream(path) << text;
  return path;
}

std::string refusal(const std::string& text) {
  const std::string path = write(text);
  auto r = read_key_file(path);
  std::remove(path.c_str());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find(path) != std::string::npos);  // names the file
  return r.error().message;
}

}  // namespace

TEST_CASE("a key file of one key gives the key sent and accepted") {
  const std::string path = write(kKeyA + "\n");
  auto r = read_key_file(path);
  std::remove(path.c_str());
  REQUIRE(r.ok());
  REQUIRE(r.value().count == 1);
  for (size_t i = 0; i < kKeyBytes; ++i) CHECK(r.value().keys[0].bytes[i] == i);
  CHECK(r.value().keys[0].id == key_id(r.value().keys[0].bytes));
}

TEST_CASE("a second line is a second accepted key, upper case and CRLF are fine") {
  auto r = parse_key_file(kKeyA + "\r\n" + kKeyB + "\r\n\n", "k");
  REQUIRE(r.ok());
  REQUIRE(r.value().count == 2);
  CHECK(r.value().keys[1].bytes[0] == 0xFF);
  CHECK(r.value().keys[1].bytes[31] == 0x00);
  CHECK(r.value().keys[0].id != r.value().keys[1].id);
}

TEST_CASE("key ids differ between keys and do not depend on the file") {
  Key a{}, b{};
  b[31] = 1;
  CHECK(key_id(a) != key_id(b));
  CHECK(key_id(a) == key_id(a));
}

TEST_CASE("a missing key file is refused naming the file and the reason") {
  auto r = read_key_file("/nonexistent/dir/cluster.key");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("/nonexistent/dir/cluster.key") != std::string::npos);
  CHECK(r.error().message.find("No such file") != std::string::npos);
}

TEST_CASE("an unreadable key file is refused naming the reason") {
  auto dir = read_key_file("/tmp");  // a directory opens but does not read
  REQUIRE_FALSE(dir.ok());
  CHECK(dir.error().message.find("cannot read") != std::string::npos);
  if (::geteuid() != 0) {  // root reads any file: the permission case needs another user
    const std::string path = write(kKeyA);
    ::chmod(path.c_str(), 0);
    auto r = read_key_file(path);
    std::remove(path.c_str());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("Permission denied") != std::string::npos);
  }
}

TEST_CASE("an empty key file is refused") {
  CHECK(refusal("").find("empty") != std::string::npos);
  CHECK(refusal("\n\n").find("empty") != std::string::npos);
}

TEST_CASE("a key of the wrong length is refused with its length") {
  CHECK(refusal(kKeyA.substr(0, 63)).find("63 characters") != std::string::npos);
  CHECK(refusal(kKeyA + "0").find("65 characters") != std::string::npos);
  CHECK(refusal(kKeyA.substr(0, 32)).find("32 characters: a 256-bit key is 64") != std::string::npos);
}

TEST_CASE("a key with a non-hexadecimal character is refused with its position") {
  std::string bad = kKeyA;
  bad[10] = 'g';
  CHECK(refusal(bad).find("character 11 is not hexadecimal") != std::string::npos);
  CHECK(refusal(kKeyA + "\n" + std::string(64, 'z')).find("line 2") != std::string::npos);
}

TEST_CASE("an empty first line, three keys or a repeated key are refused") {
  CHECK(refusal("\n" + kKeyA).find("line 1: empty") != std::string::npos);
  CHECK(refusal(kKeyA + "\n" + kKeyB + "\n" + kKeyA).find("at most two keys") != std::string::npos);
  CHECK(refusal(kKeyA + "\n" + kKeyA).find("repeats") != std::string::npos);
}
