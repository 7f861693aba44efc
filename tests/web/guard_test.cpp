// SPDX-License-Identifier: MIT
// The rules of who gets into a `volseg web` job and which files it touches.
#include "volseg/web/guard.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "volseg/io/error.hpp"

namespace fs = std::filesystem;
using volseg::web::Roots;

TEST(Token, FortyEightHexDigitsDifferentEachTime) {
  const auto a = volseg::web::new_token(), b = volseg::web::new_token();
  EXPECT_EQ(a.size(), 48u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(a, b);
}

TEST(Token, SameSecretComparesWholeStrings) {
  EXPECT_TRUE(volseg::web::same_secret("abc", "abc"));
  EXPECT_FALSE(volseg::web::same_secret("abc", "abd"));
  EXPECT_FALSE(volseg::web::same_secret("abc", "abcd"));  // a prefix is not the token
  EXPECT_FALSE(volseg::web::same_secret("abcd", "abc"));
  EXPECT_FALSE(volseg::web::same_secret("", "abc"));
  EXPECT_TRUE(volseg::web::same_secret("", ""));
}

TEST(Token, QueryAndCookieValues) {
  EXPECT_EQ(volseg::web::query_value("a=1&token=xyz", "token"), "xyz");
  EXPECT_EQ(volseg::web::query_value("token=a%2Bb+c", "token"), "a+b c");
  EXPECT_FALSE(volseg::web::query_value("tokens=1&atoken=2", "token"));
  EXPECT_EQ(volseg::web::cookie_value("x=1; volseg-web-80=tok; y=2", "volseg-web-80"), "tok");
  EXPECT_FALSE(volseg::web::cookie_value("volseg-web-8080=tok", "volseg-web-80"));
}

TEST(Origin, SameOriginOrListed) {
  const std::vector<std::string> none, proxy{"https://ondemand.example.org"}, any{"*"};
  EXPECT_TRUE(volseg::web::origin_allowed("", "127.0.0.1:8765", none));  // not a browser
  EXPECT_TRUE(volseg::web::origin_allowed("http://127.0.0.1:8765", "127.0.0.1:8765", none));
  EXPECT_TRUE(volseg::web::origin_allowed("https://127.0.0.1:8765", "127.0.0.1:8765", none));
  EXPECT_FALSE(volseg::web::origin_allowed("http://evil.example", "127.0.0.1:8765", none));
  EXPECT_FALSE(volseg::web::origin_allowed("http://127.0.0.1:9999", "127.0.0.1:8765", none));
  EXPECT_FALSE(volseg::web::origin_allowed("http://127.0.0.1:8765", "", none));
  EXPECT_TRUE(volseg::web::origin_allowed("https://ondemand.example.org", "node7:8765", proxy));
  EXPECT_TRUE(volseg::web::origin_allowed("http://anything", "node7:8765", any));
}

class RootsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    top = fs::temp_directory_path() / ("volseg-roots-" + std::to_string(::getpid()));
    fs::create_directories(top / "data" / "sub");
    fs::create_directories(top / "other");
    std::ofstream(top / "data" / "v.nc") << "x";
    std::ofstream(top / "other" / "secret.nc") << "x";
    fs::create_symlink(top / "other" / "secret.nc", top / "data" / "link.nc");
    fs::create_symlink(top / "other", top / "data" / "out");
  }
  void TearDown() override { fs::remove_all(top); }
  fs::path top;
};

TEST_F(RootsTest, InputsInsideOnly) {
  const Roots roots({(top / "data").string()});
  EXPECT_EQ(roots.input("v.nc"), fs::canonical(top / "data" / "v.nc"));
  EXPECT_EQ(roots.input((top / "data" / "v.nc").string()), fs::canonical(top / "data" / "v.nc"));
  EXPECT_THROW(roots.input("../other/secret.nc"), volseg::Error);
  EXPECT_THROW(roots.input("sub/../v.nc"), volseg::Error);  // no '..' at all
  EXPECT_THROW(roots.input((top / "other" / "secret.nc").string()), volseg::Error);
  EXPECT_THROW(roots.input("link.nc"), volseg::Error);        // a symbolic link out
  EXPECT_THROW(roots.input("out/secret.nc"), volseg::Error);  // through a linked folder
  EXPECT_THROW(roots.input("missing.nc"), volseg::Error);
  EXPECT_THROW(roots.input("/etc/passwd"), volseg::Error);
  EXPECT_THROW(roots.input(""), volseg::Error);
}

TEST_F(RootsTest, OutputsInsideAndNotLinks) {
  const Roots roots({(top / "data").string()});
  EXPECT_EQ(roots.output("mask.nc"), fs::canonical(top / "data") / "mask.nc");
  EXPECT_EQ(roots.output("sub/mask.nc"), fs::canonical(top / "data") / "sub" / "mask.nc");
  EXPECT_THROW(roots.output("link.nc"), volseg::Error);  // writing through it would land outside
  EXPECT_THROW(roots.output("out/mask.nc"), volseg::Error);
  EXPECT_THROW(roots.output("nosuchdir/mask.nc"), volseg::Error);
  EXPECT_THROW(roots.output("/tmp/mask.nc"), volseg::Error);
  EXPECT_THROW(roots.output("../mask.nc"), volseg::Error);
}

TEST_F(RootsTest, PrefixOfANameIsNotAFolder) {
  fs::create_directories(top / "data2");
  std::ofstream(top / "data2" / "v.nc") << "x";
  const Roots roots({(top / "data").string()});
  EXPECT_THROW(roots.input((top / "data2" / "v.nc").string()), volseg::Error);
}

TEST(Roots, MissingFolderRefused) { EXPECT_THROW(Roots({"/no/such/folder/anywhere"}), volseg::Error); }
