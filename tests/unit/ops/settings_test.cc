// SPDX-License-Identifier: Apache-2.0
// The settings table (fwdsink/settings.h): precedence by source, errors that name the
// source and the key, the TOML file, the FWDSINK_* environment, redaction; and the config
// and credential files read by ReadRegularFile (a folder, a device, a file too large are
// refused, naming the file). @ref LLP 0023#regular-files
#include "fwdsink/settings.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "support/test_files.h"

namespace {

namespace fs = std::filesystem;
using fwdsink::Settings;
using fwdsink::SettingSource;
using fwdsink::StatusCode;
using fwdsink::test::FreshDir;
using fwdsink::test::WriteFile;
using std::chrono::milliseconds;

constexpr std::string_view kSuite = "settings";
constexpr std::string_view kUrl = "http://127.0.0.1:9/ingest";

bool Contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

bool Has(const std::string& text, std::string_view part) { return Contains(text, part); }

// Settings with the two required keys set by flags.
Settings Required() {
  Settings s;
  REQUIRE(s.Set("spool", "/tmp/spool", SettingSource::kFlag, "--spool").ok());
  REQUIRE(s.Set("url", kUrl, SettingSource::kFlag, "--url").ok());
  return s;
}

std::string ValueOf(const Settings& s, std::string_view key) {
  std::string out;
  for (const auto& e : s.Describe()) {
    if (e.key == key) out += (out.empty() ? "" : "|") + e.value;
  }
  return out;
}

}  // namespace

TEST_CASE("the table: flags, keys and variables map onto each other; defaults parse") {
  CHECK(fwdsink::FlagForKey("chunk_bytes") == "--chunk-bytes");
  CHECK(fwdsink::KeyForFlag("--chunk-bytes") == "chunk_bytes");
  CHECK(fwdsink::KeyForFlag("--chunk_bytes").empty());
  CHECK(fwdsink::KeyForFlag("--nope").empty());
  CHECK(fwdsink::EnvironmentVariableForKey("chunk_bytes") == "FWDSINK_CHUNK_BYTES");
  CHECK(fwdsink::KeyForField("forward.backpressure.ladder[1]") == "ladder");
  for (const fwdsink::SettingInfo& info : fwdsink::SettingTable()) {
    CAPTURE(info.key);
    CHECK(fwdsink::KeyForFlag(fwdsink::FlagForKey(info.key)) == info.key);
    CHECK_FALSE(info.help.empty());
    CHECK(info.is_switch == info.value_name.empty());
    // A documented default is a valid value of its key, and builds.
    if (info.default_value.empty()) continue;
    Settings s = Required();
    CHECK(s.Set(info.key, info.default_value, SettingSource::kFlag, "--x").ok());
    CHECK(s.Build().ok());
  }
  // Every flag the daemon had before the table is a key.
  for (std::string_view key : {"spool",
                               "url",
                               "once",
                               "token_file",
                               "chunk_bytes",
                               "compression",
                               "zstd_level",
                               "ladder",
                               "max_wait",
                               "inline_budget",
                               "jitter",
                               "pacing",
                               "horizon",
                               "poll",
                               "label",
                               "key_header",
                               "ca_file",
                               "connect_timeout",
                               "read_timeout",
                               "min_throughput",
                               "response_timeout",
                               "keep_alive",
                               "max_split_requests",
                               "log_json",
                               "progress",
                               "log_file",
                               "stats_interval",
                               "header",
                               "header_file",
                               "basic_auth_file",
                               "client_cert",
                               "client_key",
                               "proxy",
                               "key_param",
                               "no_key_header",
                               "profile",
                               "retry_status",
                               "log_level"}) {
    CAPTURE(key);
    CHECK(fwdsink::FindSetting(key) != nullptr);
  }
}

TEST_CASE("precedence: flags, then environment, then file, then defaults, whatever the order") {
  const auto dir = FreshDir(kSuite, "precedence");
  WriteFile(dir / "f.toml", "chunk_bytes = \"2m\"\ninline_budget = 60\nhorizon = \"1h\"\n");
  Settings s = Required();
  // The flag is set first, the file and the environment later: the flag still wins.
  REQUIRE(s.Set("chunk_bytes", "4m", SettingSource::kFlag, "--chunk-bytes").ok());
  REQUIRE(s.LoadFile(dir / "f.toml").ok());
  const std::vector<std::string> env = {"FWDSINK_CHUNK_BYTES=3m", "FWDSINK_INLINE_BUDGET=90",
                                        "PATH=/bin"};
  REQUIRE(s.LoadEnvironment(env, nullptr).ok());
  const auto built = s.Build();
  REQUIRE(built.ok());
  const auto& f = built->driver.forward;
  CHECK(f.chunker.chunk_bytes == 4u << 20);                                  // flag
  CHECK(f.backpressure.inline_budget == milliseconds{90'000});               // environment
  CHECK(built->driver.horizon == milliseconds{3'600'000});                   // file
  CHECK(f.backpressure.max_wait == fwdsink::BackpressurePolicy{}.max_wait);  // default
  // Each key is looked up, not met in a loop that may skip it: a missing key fails.
  const auto described = s.Describe();
  const auto entry = [&](std::string_view key) {
    const auto it = std::find_if(described.begin(), described.end(),
                                 [&](const Settings::Effective& e) { return e.key == key; });
    REQUIRE_MESSAGE(it != described.end(), "Describe() has no " << key);
    return *it;
  };
  const auto chunk = entry("chunk_bytes");
  CHECK(chunk.source == SettingSource::kFlag);
  CHECK(chunk.where == "--chunk-bytes");
  CHECK(chunk.value == "4m");
  const auto budget = entry("inline_budget");
  CHECK(budget.source == SettingSource::kEnvironment);
  CHECK(budget.where == "FWDSINK_INLINE_BUDGET");
  CHECK(budget.value == "90");
  const auto horizon = entry("horizon");
  CHECK(horizon.source == SettingSource::kFile);
  CHECK(horizon.where == (dir / "f.toml").string() + ":3");
  CHECK(horizon.value == "1h");
  CHECK(entry("max_wait").source == SettingSource::kDefault);
  SUBCASE("twin: without the flag and the variable the file's value holds") {
    Settings only_file = Required();
    REQUIRE(only_file.LoadFile(dir / "f.toml").ok());
    const auto b = only_file.Build();
    REQUIRE(b.ok());
    CHECK(b->driver.forward.chunker.chunk_bytes == 2u << 20);
    CHECK(b->driver.forward.backpressure.inline_budget == milliseconds{60'000});
  }
}

TEST_CASE("a bad value names its source and the key: file line, variable, flag, api") {
  const auto dir = FreshDir(kSuite, "errors");
  const std::string file = (dir / "f.toml").string();
  SUBCASE("file: FILE:LINE: key") {
    WriteFile(file, "# comment\nlabel = \"a\"\nchunk_bytes = \"4x\"\n");
    Settings s;
    const fwdsink::Status e = s.LoadFile(file);
    CHECK(e.code() == StatusCode::kInvalidArgument);
    CHECK(e.message().starts_with(file + ":3: chunk_bytes: '4x' is not a byte count"));
  }
  SUBCASE("environment: the variable and the key") {
    Settings s;
    const std::vector<std::string> env = {"FWDSINK_CHUNK_BYTES=4x"};
    const fwdsink::Status e = s.LoadEnvironment(env, nullptr);
    CHECK(e.message().starts_with("FWDSINK_CHUNK_BYTES: chunk_bytes: '4x'"));
  }
  SUBCASE("flag: the flag") {
    Settings s;
    const fwdsink::Status e = s.Set("chunk_bytes", "4x", SettingSource::kFlag, "--chunk-bytes");
    CHECK(e.code() == StatusCode::kInvalidArgument);
    CHECK(e.message().starts_with("--chunk-bytes: '4x'"));
    CHECK(e.field() == "chunk_bytes");
  }
  SUBCASE("api: where and the key; an unknown key is kNotFound") {
    Settings s;
    CHECK(s.Set("chunk_bytes", "4x", SettingSource::kApi, "api")
              .message()
              .starts_with("api: chunk_bytes: '4x'"));
    CHECK(s.Set("chunk_byte", "4m", SettingSource::kApi, "api").code() == StatusCode::kNotFound);
  }
  SUBCASE("Build: Validate's field is named by key and source") {
    WriteFile(file, "ladder = [10]\ninline_budget = 1\n");
    Settings s = Required();
    REQUIRE(s.LoadFile(file).ok());
    const auto b = s.Build();
    REQUIRE_FALSE(b.ok());
    CHECK(b.status().field() == "inline_budget");
    CHECK(b.status().message().starts_with(file + ":2: inline_budget: "));
  }
  SUBCASE("Build: a required key that no source set") {
    Settings s;
    REQUIRE(s.Set("spool", "/tmp/x", SettingSource::kFlag, "--spool").ok());
    const auto b = s.Build();
    REQUIRE_FALSE(b.ok());
    CHECK(Contains(b.status().message(), "--url: is required"));
    CHECK(Contains(b.status().message(), "FWDSINK_URL"));
  }
  SUBCASE("Build: a cross-key rule names both keys and where") {
    Settings s = Required();
    REQUIRE(s.Set("token_file", "/t", SettingSource::kEnvironment, "FWDSINK_TOKEN_FILE").ok());
    REQUIRE(s.Set("basic_auth_file", "/b", SettingSource::kFlag, "--basic-auth-file").ok());
    const auto b = s.Build();
    REQUIRE_FALSE(b.ok());
    CHECK(b.status().message() == "--basic-auth-file: cannot be combined with token_file");
  }
  SUBCASE("twin: the same keys with good values build") {
    WriteFile(file, "chunk_bytes = \"4m\"\nladder = [10, 20]\ninline_budget = 60\n");
    Settings s = Required();
    REQUIRE(s.LoadFile(file).ok());
    const std::vector<std::string> env = {"FWDSINK_JITTER=0"};
    REQUIRE(s.LoadEnvironment(env, nullptr).ok());
    const auto b = s.Build();
    REQUIRE(b.ok());
    CHECK(b->driver.forward.backpressure.ladder ==
          std::vector<milliseconds>{milliseconds{10'000}, milliseconds{20'000}});
  }
}

TEST_CASE("the config file: unknown keys, sections and syntax errors name the line") {
  const auto dir = FreshDir(kSuite, "file");
  const std::string file = (dir / "f.toml").string();
  Settings s;
  WriteFile(file, "url = \"http://h/\"\n\nchunk-bytes = \"4m\"\n");
  fwdsink::Status e = s.LoadFile(file);
  CHECK(e.code() == StatusCode::kNotFound);
  CHECK(e.message() == file + ":3: unknown key 'chunk-bytes' (did you mean chunk_bytes?)");
  WriteFile(file, "[forward]\nurl = \"http://h/\"\n");
  CHECK(s.LoadFile(file).message() == file + ":1: unknown key 'forward'");
  WriteFile(file, "[label]\nx = 1\n");
  CHECK(s.LoadFile(file).message().starts_with(file + ":1: label: expected a string"));
  WriteFile(file, "url = \"http://h/\"\nlabel = \n");
  e = s.LoadFile(file);
  CHECK(e.code() == StatusCode::kInvalidArgument);
  CHECK(e.message().starts_with(file + ":2: "));
  CHECK(s.LoadFile(dir / "missing.toml").code() == StatusCode::kNotFound);
  SUBCASE("twin: switches, numbers, arrays and comments are read") {
    WriteFile(file,
              "# fwdsink\nspool = \"/s\"\nurl = \"http://h/\"  # the endpoint\nonce = true\n"
              "jitter = 0.25\nheader = [\"X-A: 1\", \"X-B: 2\"]\nretry_status = [408, \"5xx\"]\n");
    Settings good;
    REQUIRE(good.LoadFile(file).ok());
    const auto b = good.Build();
    REQUIRE(b.ok());
    CHECK(b->daemon.once);
    CHECK(b->driver.forward.backpressure.jitter == doctest::Approx(0.25));
    CHECK(b->driver.forward.headers.size() == 2);
    CHECK(b->driver.forward.responses.retry_all_5xx);
    CHECK(b->driver.forward.responses.retry_statuses == std::vector<int>{408});
  }
}

TEST_CASE("the environment: unknown FWDSINK_ variables are reported, not errors") {
  Settings s = Required();
  std::vector<std::string> unknown;
  const std::vector<std::string> env = {"FWDSINK_CHUNK_BYTE=4m",   // typo
                                        "FWDSINK_chunk_bytes=4m",  // not upper case
                                        "FWDSINK_CONFIG=/etc/x",   // known, not a key
                                        "FWDSINK_LABEL=edge",      // a key
                                        "FWDSINK_MAX_WAIT=",       // empty: unset
                                        "OTHER_LABEL=x"};
  static constexpr std::string_view kIgnore[] = {"FWDSINK_CONFIG"};
  REQUIRE(s.LoadEnvironment(env, &unknown, kIgnore).ok());
  CHECK(unknown == std::vector<std::string>{"FWDSINK_CHUNK_BYTE", "FWDSINK_chunk_bytes"});
  const auto b = s.Build();
  REQUIRE(b.ok());
  CHECK(b->driver.forward.label == "edge");
  CHECK(b->driver.forward.chunker.chunk_bytes == fwdsink::ChunkerOptions{}.chunk_bytes);
}

TEST_CASE("switches and repeatable keys across sources") {
  const auto dir = FreshDir(kSuite, "lists");
  WriteFile(dir / "f.toml", "once = true\nheader = [\"X-A: 1\", \"X-B: 2\"]\n");
  Settings s = Required();
  REQUIRE(s.LoadFile(dir / "f.toml").ok());
  SUBCASE("a later source replaces the whole list; one source appends") {
    const std::vector<std::string> env = {"FWDSINK_HEADER=X-C: 3\nX-D: 4", "FWDSINK_ONCE=0"};
    REQUIRE(s.LoadEnvironment(env, nullptr).ok());
    const auto b = s.Build();
    REQUIRE(b.ok());
    CHECK(b->driver.forward.headers == fwdsink::HeaderList{{"X-C", "3"}, {"X-D", "4"}});
    CHECK_FALSE(b->daemon.once);  // the variable turned the file's switch off
  }
  SUBCASE("twin: without the variables the file's list and switch hold") {
    const auto b = s.Build();
    REQUIRE(b.ok());
    CHECK(b->driver.forward.headers == fwdsink::HeaderList{{"X-A", "1"}, {"X-B", "2"}});
    CHECK(b->daemon.once);
  }
  SUBCASE("a switch refuses other words") {
    CHECK(s.Set("once", "yes", SettingSource::kEnvironment, "FWDSINK_ONCE")
              .message()
              .starts_with("FWDSINK_ONCE: once: 'yes' is not true, false, 1 or 0"));
  }
}

TEST_CASE("Describe redacts secrets: header values, URL passwords") {
  Settings s;
  REQUIRE(s.Set("spool", "/s", SettingSource::kFlag, "--spool").ok());
  REQUIRE(s.Set("url", "http://alice:pw-123@h/x", SettingSource::kFlag, "--url").ok());
  REQUIRE(s.Set("header", "X-Api-Key: k-456", SettingSource::kFlag, "--header").ok());
  REQUIRE(s.Set("proxy", "http://p:pp-789@proxy:3128", SettingSource::kFlag, "--proxy").ok());
  REQUIRE(s.Set("label", "edge-7", SettingSource::kFlag, "--label").ok());
  std::string all;
  for (const auto& e : s.Describe()) all += e.key + "=" + e.value + "\n";
  CHECK_FALSE(Contains(all, "pw-123"));
  CHECK_FALSE(Contains(all, "k-456"));
  CHECK_FALSE(Contains(all, "pp-789"));
  CHECK(ValueOf(s, "header") == "X-Api-Key: <redacted>");
  // Twin: what is not secret is shown as given.
  CHECK(ValueOf(s, "label") == "edge-7");
  CHECK(ValueOf(s, "spool") == "/s");
  CHECK(ValueOf(s, "chunk_bytes") == "1m");  // the default
}

TEST_CASE("keep_alive: 30 s by default, 0 keeps connections, a negative one is refused") {
  CHECK(Required().Build()->driver.forward.transport.keep_alive == std::chrono::seconds(30));
  Settings s = Required();
  REQUIRE(s.Set("keep_alive", "1.5s", SettingSource::kFlag, "--keep-alive").ok());
  CHECK(s.Build()->driver.forward.transport.keep_alive == std::chrono::milliseconds(1500));
  REQUIRE(s.Set("keep_alive", "0", SettingSource::kFlag, "--keep-alive").ok());
  CHECK(s.Build()->driver.forward.transport.keep_alive == std::chrono::milliseconds(0));
  SUBCASE("twin: negative or not a duration") {
    CHECK_FALSE(s.Set("keep_alive", "-1", SettingSource::kFlag, "--keep-alive").ok());
    CHECK_FALSE(s.Set("keep_alive", "soon", SettingSource::kFlag, "--keep-alive").ok());
  }
}

TEST_CASE(
    "expect_continue_bytes: default 64 KiB, 0 turns it off, from a flag, a variable or a file") {
  const auto dir = FreshDir(kSuite, "expect");
  SUBCASE("the default") {
    const auto b = Required().Build();
    REQUIRE(b.ok());
    CHECK(b->driver.forward.transport.expect_continue_bytes == 64u * 1024);
    // ... and only while a refusal is likely. @ref LLP 0017#expect-when
    CHECK(b->driver.forward.expect_continue == fwdsink::ExpectContinue::kWhenLikely);
  }
  SUBCASE("always: every body of 64 KiB or more, as before issue 39; a size after it wins") {
    Settings s = Required();
    REQUIRE(
        s.Set("expect_continue_bytes", "always", SettingSource::kFlag, "--expect-continue-bytes")
            .ok());
    const auto b = s.Build();
    REQUIRE(b.ok());
    CHECK(b->driver.forward.expect_continue == fwdsink::ExpectContinue::kAlways);
    CHECK(b->driver.forward.transport.expect_continue_bytes == 64u * 1024);
    WriteFile(dir / "always.toml", "expect_continue_bytes = \"always\"\n");
    Settings f = Required();
    REQUIRE(f.LoadFile(dir / "always.toml").ok());  // the config key takes it too
    REQUIRE(f.Build().ok());
    CHECK(f.Build()->driver.forward.expect_continue == fwdsink::ExpectContinue::kAlways);
    REQUIRE(f.Set("expect_continue_bytes", "128k", SettingSource::kFlag, "--expect-continue-bytes")
                .ok());
    CHECK(f.Build()->driver.forward.expect_continue == fwdsink::ExpectContinue::kWhenLikely);
    CHECK(f.Build()->driver.forward.transport.expect_continue_bytes == 128u * 1024);
  }
  SUBCASE("a flag, 0 = off") {
    Settings s = Required();
    REQUIRE(
        s.Set("expect_continue_bytes", "0", SettingSource::kFlag, "--expect-continue-bytes").ok());
    const auto b = s.Build();
    REQUIRE(b.ok());
    CHECK(b->driver.forward.transport.expect_continue_bytes == 0);
  }
  SUBCASE("the environment and the file") {
    WriteFile(dir / "f.toml", "expect_continue_bytes = \"1m\"\n");
    Settings s = Required();
    REQUIRE(s.LoadFile(dir / "f.toml").ok());
    const auto from_file = s.Build();
    REQUIRE(from_file.ok());
    CHECK(from_file->driver.forward.transport.expect_continue_bytes == 1u << 20);
    const std::vector<std::string> env = {"FWDSINK_EXPECT_CONTINUE_BYTES=16k"};
    REQUIRE(s.LoadEnvironment(env, nullptr).ok());
    const auto from_env = s.Build();
    REQUIRE(from_env.ok());
    CHECK(from_env->driver.forward.transport.expect_continue_bytes == 16u * 1024);
  }
  SUBCASE("a bad value is named") {
    Settings s = Required();
    const auto st =
        s.Set("expect_continue_bytes", "4x", SettingSource::kFlag, "--expect-continue-bytes");
    CHECK(st.code() == StatusCode::kInvalidArgument);
    CHECK(Contains(st.message(), "--expect-continue-bytes"));
    CHECK(Contains(st.message(), "4x"));
  }
}

TEST_CASE("The config file and the credential files are read by ReadRegularFile") {
  const fs::path dir = FreshDir(kSuite, "callers");
  SUBCASE("Settings::LoadFile: a folder, /dev/zero, 2 MiB") {
    fwdsink::Settings s;
    fwdsink::Status e = s.LoadFile(dir);
    CHECK(e.field() == "config_file");
    CHECK(Has(e.message(), "is a directory, not a regular file"));
    e = s.LoadFile("/dev/zero");
    CHECK(Has(e.message(), "/dev/zero is a character device"));
    REQUIRE(WriteFile(dir / "huge.toml", "label = \"x\"\n" + std::string(2 << 20, '#')));
    e = s.LoadFile(dir / "huge.toml");
    CHECK(Has(e.message(), "is larger than 1048576 bytes"));
    REQUIRE(WriteFile(dir / "ok.toml", "label = \"x\"\n"));
    CHECK(s.LoadFile(dir / "ok.toml").ok());  // twin
  }
  SUBCASE("token, header and Basic-auth files") {
    CHECK(Has(fwdsink::CheckTokenFile(dir).message(), "is a directory"));
    CHECK(Has(fwdsink::CheckTokenFile("/dev/zero").message(), "a character device"));
    fwdsink::ForwardOptions forward;
    fwdsink::RequestFiles files;
    files.header_files = {{"X-Key", dir}};
    CHECK(Has(fwdsink::LoadRequestSecrets(files, forward).message(),
              "header_file " + dir.string() + ": " + dir.string() + " is a directory"));
    files.header_files.clear();
    files.basic_auth_file = dir;
    CHECK(Has(fwdsink::LoadRequestSecrets(files, forward).message(), "is a directory"));
    REQUIRE(WriteFile(dir / "token", "t0k3n\n"));
    CHECK(fwdsink::CheckTokenFile(dir / "token").ok());  // twin
  }
  SUBCASE("the token provider keeps its token when the file becomes a folder") {
    REQUIRE(WriteFile(dir / "token", "first\n"));
    auto tokens = fwdsink::FileTokenProvider(dir / "token");
    CHECK(tokens(false) == std::optional<std::string>("first"));
    fs::remove(dir / "token");
    fs::create_directory(dir / "token");
    CHECK(tokens(true) == std::optional<std::string>("first"));
    fs::remove(dir / "token");
    CHECK(tokens(true) == std::nullopt);  // twin: a missing file is no token
  }
}
