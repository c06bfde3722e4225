// SPDX-License-Identifier: Apache-2.0
// Correct requests for any server (issue 10): the URL classes ParseEndpoint accepts and
// refuses, redaction, header checks, Basic auth, gzip, and the daemon's request flags;
// then the wire itself, over real sockets to an in-process server.
#include <doctest/doctest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "fwdsink/codec.h"
#include "fwdsink/forward_sink.h"
#include "fwdsink/transport.h"
#include "request_options.h"
#include "support/fake_clock.h"
#include "support/scripted_server.h"
#include "support/test_files.h"

using namespace std::chrono_literals;
using fwdsink::Endpoint;
using fwdsink::ParseEndpoint;
using fwdsink::test::FreshDir;

namespace {

constexpr std::string_view kSuite = "request";

Endpoint Parsed(std::string_view url) {
  auto ep = ParseEndpoint(url);
  REQUIRE_MESSAGE(ep.ok(), ep.status().ToString());
  return *ep;
}

std::string Refusal(std::string_view url) {
  auto ep = ParseEndpoint(url);
  REQUIRE_FALSE(ep.ok());
  CHECK(ep.status().field() == "url");
  return ep.status().message();
}

std::string Gunzip(const std::string& in) {
  z_stream z{};
  REQUIRE(inflateInit2(&z, 15 + 16) == Z_OK);
  std::string out(in.size() * 20 + 1024, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int r = inflate(&z, Z_FINISH);
  inflateEnd(&z);
  REQUIRE(r == Z_STREAM_END);
  out.resize(z.total_out);
  return out;
}

}  // namespace

TEST_CASE("ParseEndpoint: one test per URL class") {
  SUBCASE("host, port and path") {
    const Endpoint ep = Parsed("http://ingest.example:8080/v1/ndjson");
    CHECK(ep.host == "ingest.example");
    CHECK(ep.port == 8080);
    CHECK(ep.path == "/v1/ndjson");
    CHECK_FALSE(ep.username);
  }
  SUBCASE("a query string and no path: the path is '/' and the query follows it") {
    const Endpoint ep = Parsed("http://127.0.0.1?tenant=a");
    CHECK(ep.host == "127.0.0.1");
    CHECK(ep.port == 80);
    CHECK(ep.path == "/?tenant=a");
    const Endpoint with_port = Parsed("http://127.0.0.1:8080?tenant=a&x=1");
    CHECK(with_port.port == 8080);
    CHECK(with_port.path == "/?tenant=a&x=1");
  }
  SUBCASE("no path, no query") {
    const Endpoint ep = Parsed("https://h");
    CHECK(ep.port == 443);
    CHECK(ep.path == "/");
  }
  SUBCASE("IPv6 literals, with and without a port") {
    const Endpoint ep = Parsed("http://[::1]:8080/x");
    CHECK(ep.host == "::1");
    CHECK(ep.port == 8080);
    CHECK(ep.path == "/x");
    CHECK(ep.SchemeHostPort() == "http://[::1]:8080");
    CHECK(Parsed("http://[2001:db8::7]?q=1").path == "/?q=1");
    CHECK(Parsed("http://[::ffff:127.0.0.1]/").host == "::ffff:127.0.0.1");
  }
  SUBCASE("userinfo becomes Basic auth credentials, percent-decoded") {
    const Endpoint ep = Parsed("http://alice:s3%3Acret@127.0.0.1:8123/?q=1");
    REQUIRE(ep.username);
    CHECK(*ep.username == "alice");
    CHECK(ep.password.value_or("") == "s3:cret");
    CHECK(ep.host == "127.0.0.1");
    const Endpoint user_only = Parsed("http://bob@h/");
    CHECK(user_only.username.value_or("") == "bob");
    CHECK_FALSE(user_only.password);
  }
  SUBCASE("refused, each with its reason, and never with the password") {
    CHECK(Refusal("127.0.0.1:8080/x").find("missing scheme") != std::string::npos);
    CHECK(Refusal("ftp://h/").find("http or https") != std::string::npos);
    CHECK(Refusal("http://h:0/").find("port") != std::string::npos);
    CHECK(Refusal("http://h:65536/").find("port") != std::string::npos);
    CHECK(Refusal("http://h:/").find("port") != std::string::npos);
    CHECK(Refusal("http://h:8x/").find("port") != std::string::npos);
    CHECK(Refusal("http:///x").find("missing host") != std::string::npos);
    CHECK(Refusal("http://[::1/x").find("unterminated") != std::string::npos);
    CHECK(Refusal("http://[::1]x/").find("junk") != std::string::npos);
    CHECK(Refusal("http://[fe80::1%25eth0]/").find("IPv6") != std::string::npos);
    CHECK(Refusal("http://::1/").find("[brackets]") != std::string::npos);
    CHECK(Refusal("http://h/x#frag").find("fragment") != std::string::npos);
    CHECK(Refusal("http://h/a b").find("spaces") != std::string::npos);
    CHECK(Refusal("http://h/\xc3\xa9").find("non-ASCII") != std::string::npos);
    CHECK(Refusal("http://ho$t/").find("host name") != std::string::npos);
    CHECK(Refusal("http://:pw@h/").find("user name") != std::string::npos);
    CHECK(Refusal("http://u:p%zz@h/").find("escaped") != std::string::npos);
    const std::string m = Refusal("http://u:hunter2@h:99999/");
    CHECK(m.find("hunter2") == std::string::npos);
    CHECK(m.find("u:***@h") != std::string::npos);
  }
}

TEST_CASE("RedactUrl hides the password and nothing else") {
  CHECK(fwdsink::RedactUrl("http://u:pw@h:1/x?q") == "http://u:***@h:1/x?q");
  CHECK(fwdsink::RedactUrl("http://u@h/") == "http://u@h/");
  CHECK(fwdsink::RedactUrl("http://h/?a=b@c") == "http://h/?a=b@c");
  CHECK(fwdsink::RedactUrl("not a url") == "not a url");
}

TEST_CASE("ValidateHeaderField: RFC 9110 names and field-values") {
  CHECK(fwdsink::ValidateHeaderField("X-Scope-OrgID", "tenant-1", "--header").ok());
  CHECK(fwdsink::ValidateHeaderField("X-Key", "a b\tc \x80", "--header").ok());
  for (std::string_view bad :
       {std::string_view("a\r\nX-Evil: 1"), std::string_view("a\nb"), std::string_view("a\0b", 3),
        std::string_view("a\x01"), std::string_view(" lead"), std::string_view("trail\t")}) {
    const fwdsink::Status s = fwdsink::ValidateHeaderField("X-Key", bad, "--header-file /k");
    CHECK_FALSE(s.ok());
    CHECK(s.field() == "--header-file /k");
    CHECK(s.message().find("--header-file /k") != std::string::npos);
  }
  CHECK_FALSE(fwdsink::ValidateHeaderField("X Key", "v", "--header").ok());
  CHECK_FALSE(fwdsink::ValidateHeaderField("", "v", "--header").ok());
  CHECK_FALSE(fwdsink::ValidateHeaderField("X:Key", "v", "--header").ok());
  // The value is never quoted: it may be a secret.
  CHECK(fwdsink::ValidateHeaderField("K", "secret\n", "s").message().find("secret") ==
        std::string::npos);
}

TEST_CASE("BasicAuthorization and PercentEncode") {
  CHECK(fwdsink::BasicAuthorization("Aladdin", "open sesame") ==
        "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");  // RFC 7617's example
  CHECK(fwdsink::BasicAuthorization("a", "") == "Basic YTo=");
  CHECK(fwdsink::BasicAuthorization("ab", "c") == "Basic YWI6Yw==");
  CHECK(fwdsink::PercentEncode("p1:0-100") == "p1%3A0-100");
  CHECK(fwdsink::PercentEncode("a b&c=d~._") == "a%20b%26c%3Dd~._");
}

TEST_CASE("gzip and identity encodings") {
  CHECK(fwdsink::ParseCompression("gzip") == fwdsink::Compression::kGzip);
  CHECK(fwdsink::Encoder(fwdsink::Compression::kGzip).content_encoding() == "gzip");
  CHECK(fwdsink::Encoder(fwdsink::Compression::kIdentity).content_encoding().empty());
  fwdsink::Encoder gz(fwdsink::Compression::kGzip);
  REQUIRE(gz.ok());
  std::string rows;
  for (int i = 0; i < 5000; ++i) rows += "{\"i\":" + std::to_string(i) + ",\"h\":\"web-1\"}\n";
  std::string out;
  for (int round = 0; round < 3; ++round) {  // the stream is reset, not remade, per chunk
    REQUIRE(gz.Encode(rows, out));
    CHECK(out.size() < rows.size() / 4);
    CHECK(Gunzip(out) == rows);
  }
  REQUIRE(gz.Encode("", out));
  CHECK(Gunzip(out).empty());
}

TEST_CASE("daemon request flags: --header, secrets from files, the proxy environment") {
  SUBCASE("--header splits at the first colon and checks both parts") {
    auto h = fwdsink_cli::ParseHeaderFlag("X-Scope-OrgID:  tenant:a", "--header");
    REQUIRE(h.ok());
    CHECK(h->first == "X-Scope-OrgID");
    CHECK(h->second == "tenant:a");
    CHECK_FALSE(fwdsink_cli::ParseHeaderFlag("no colon", "--header").ok());
    CHECK_FALSE(fwdsink_cli::ParseHeaderFlag("X: a\rb", "--header").ok());
  }
  SUBCASE("--header-file and --basic-auth-file read the files, name them on error") {
    const auto dir = FreshDir(kSuite, "secrets");
    fwdsink::test::WriteFile(dir / "key", "k-123\n");
    fwdsink::test::WriteFile(dir / "bad", "k\n123\n");
    fwdsink::test::WriteFile(dir / "auth", "alice:pw:x\n");
    fwdsink_cli::RequestFlags flags;
    flags.header_files = {{"X-Api-Key", dir / "key"}};
    flags.basic_auth_file = dir / "auth";
    fwdsink::ForwardOptions f;
    REQUIRE(fwdsink_cli::LoadRequestSecrets(flags, f).ok());
    REQUIRE(f.headers.size() == 1);
    CHECK(f.headers[0].second == "k-123");
    REQUIRE(f.basic_auth);
    CHECK(f.basic_auth->user == "alice");
    CHECK(f.basic_auth->password == "pw:x");

    flags.header_files = {{"X-Api-Key", dir / "bad"}};
    const fwdsink::Status s = fwdsink_cli::LoadRequestSecrets(flags, f);
    CHECK_FALSE(s.ok());
    CHECK(s.message().find((dir / "bad").string()) != std::string::npos);
    CHECK(s.message().find("123") == std::string::npos);
    flags.header_files = {{"X-Api-Key", dir / "missing"}};
    CHECK_FALSE(fwdsink_cli::LoadRequestSecrets(flags, f).ok());
  }
  SUBCASE("proxy from the environment, curl's rules") {
    std::map<std::string, std::string> env;
    const fwdsink_cli::EnvLookup lookup = [&env](const char* n) -> std::optional<std::string> {
      const auto it = env.find(n);
      if (it == env.end()) return std::nullopt;
      return it->second;
    };
    CHECK(fwdsink_cli::ProxyFromEnvironment("https://h.example/x", lookup).empty());
    env["https_proxy"] = "http://proxy:3128";
    env["HTTP_PROXY"] = "http://cgi-poisoned:1";
    CHECK(fwdsink_cli::ProxyFromEnvironment("https://h.example/x", lookup) == "http://proxy:3128");
    CHECK(fwdsink_cli::ProxyFromEnvironment("http://h.example/x", lookup).empty());
    env["http_proxy"] = "http://plain:8080";
    CHECK(fwdsink_cli::ProxyFromEnvironment("http://h.example/x", lookup) == "http://plain:8080");
    env["no_proxy"] = "localhost, .example";
    CHECK(fwdsink_cli::ProxyFromEnvironment("https://h.example/x", lookup).empty());
    CHECK(fwdsink_cli::ProxyFromEnvironment("https://example/x", lookup).empty());
    CHECK(fwdsink_cli::ProxyFromEnvironment("https://notexample/x", lookup) == "http://proxy:3128");
    env["no_proxy"] = "*";
    CHECK(fwdsink_cli::ProxyFromEnvironment("https://any/x", lookup).empty());
  }
}

TEST_CASE("the request on the wire: headers, no identity encoding, the key in the query") {
  fwdsink_test::ScriptedServer server;
  const auto dir = FreshDir(kSuite, "wire");
  fwdsink::test::WriteFile(dir / "p.ndjson", "{\"a\":1}\n{\"a\":2}\n");
  fwdsink::FakeClock clock;
  auto make = [&](fwdsink::ForwardOptions o) {
    o.transport.read_timeout = 5s;
    fwdsink::ForwardDeps deps;
    deps.time = &clock;
    deps.sleeper = &clock;
    auto sink = fwdsink::ForwardSink::Create(std::move(o), std::move(deps));
    REQUIRE_MESSAGE(sink.ok(), sink.status().ToString());
    return std::move(sink).value();
  };
  SUBCASE("identity: no Content-Encoding; extra headers; userinfo as Basic auth") {
    fwdsink::ForwardOptions o;
    const std::string port = server.url("").substr(std::string("http://127.0.0.1").size());
    o.url = "http://alice:s3cret@127.0.0.1" + port + "?query=INSERT+INTO+t";
    o.compression = fwdsink::Compression::kIdentity;
    o.headers = {{"X-Scope-OrgID", "tenant-a"}};
    auto sink = make(o);
    CHECK(sink->ForwardPartition("p", dir / "p.ndjson", 0, {}).outcome ==
          fwdsink::Outcome::kDelivered);
    const auto reqs = server.requests();
    REQUIRE(reqs.size() == 1);
    CHECK(reqs[0].headers.count("Content-Encoding") == 0);
    CHECK(reqs[0].target == "/?query=INSERT+INTO+t");  // the '+' is not re-encoded
    CHECK(reqs[0].authorization == fwdsink::BasicAuthorization("alice", "s3cret"));
    CHECK(reqs[0].headers.find("X-Scope-OrgID")->second == "tenant-a");
    CHECK(reqs[0].key == "p:0-16");
  }
  SUBCASE("gzip; --key-param with and without the header; Basic auth from options") {
    fwdsink::ForwardOptions o;
    o.url = server.url("/ingest?db=x");
    o.compression = fwdsink::Compression::kGzip;
    o.idempotency_query_param = "insert_deduplication_token";
    o.basic_auth = fwdsink::BasicAuth{"u", "p"};
    SUBCASE("header kept") {}
    SUBCASE("header dropped") { o.send_idempotency_header = false; }
    const bool header = o.send_idempotency_header;
    auto sink = make(o);
    CHECK(sink->ForwardPartition("p", dir / "p.ndjson", 0, {}).outcome ==
          fwdsink::Outcome::kDelivered);
    const auto reqs = server.requests();
    REQUIRE(reqs.size() == 1);
    CHECK(reqs[0].encoding == "gzip");
    // cpp-httplib's server (built with zlib) inflates a gzip body itself: this is the
    // body after a real gzip decoder read it.
    CHECK(reqs[0].body == "{\"a\":1}\n{\"a\":2}\n");
    CHECK(reqs[0].target == "/ingest?db=x&insert_deduplication_token=p%3A0-16");
    CHECK(reqs[0].key == (header ? "p:0-16" : ""));
    CHECK(reqs[0].authorization == "Basic dTpw");
  }
}

TEST_CASE("request options are validated, naming the field") {
  fwdsink::ForwardOptions o;
  o.url = "http://h/";
  CHECK(fwdsink::Validate(o).ok());
  SUBCASE("a header the sink owns") {
    o.headers = {{"content-encoding", "br"}};
    CHECK(fwdsink::Validate(o).field() == "headers[0]");
  }
  SUBCASE("a pack's member keys and the 100-continue, which the sink sets") {
    o.headers = {{"X-A", "1"}, {"idempotency-members", "p:0-9"}};
    CHECK(fwdsink::Validate(o).field() == "headers[1]");
    o.headers = {{"expect", "100-continue"}, {"X-A", "1"}};
    CHECK(fwdsink::Validate(o).field() == "headers[0]");
  }
  SUBCASE("the idempotency header itself") {
    o.headers = {{"X-A", "1"}, {"idempotency-key", "x"}};
    CHECK(fwdsink::Validate(o).field() == "headers[1]");
  }
  SUBCASE("a value with CR LF") {
    o.headers = {{"X-A", "1\r\nX-B: 2"}};
    CHECK(fwdsink::Validate(o).field() == "headers[0]");
  }
  SUBCASE("Authorization twice") {
    o.basic_auth = fwdsink::BasicAuth{"u", "p"};
    o.headers = {{"Authorization", "Bearer x"}};
    CHECK(fwdsink::Validate(o).field() == "headers[0]");
  }
  SUBCASE("the key nowhere") {
    o.send_idempotency_header = false;
    CHECK(fwdsink::Validate(o).field() == "send_idempotency_header");
  }
  SUBCASE("a retry status that has its own rule") {
    o.responses.retry_statuses = {408, 429};
    CHECK(fwdsink::Validate(o).field() == "responses.retry_statuses");
  }
  SUBCASE("mTLS half configured") {
    o.url = "https://h/";
    o.transport.client_cert_file = "/etc/hostname";
    auto sink = fwdsink::ForwardSink::Create(o, {});
    REQUIRE_FALSE(sink.ok());
    CHECK(sink.status().field() == "transport.client_cert_file");
  }
  SUBCASE("a proxy that is not http://") {
    o.transport.proxy = "https://proxy:3128";
    auto sink = fwdsink::ForwardSink::Create(o, {});
    REQUIRE_FALSE(sink.ok());
    CHECK(sink.status().field() == "transport.proxy");
  }
}
