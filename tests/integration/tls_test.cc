// SPDX-License-Identifier: Apache-2.0
// ForwardSink over HTTPS against the reference receiver: a trusted chain is delivered; an
// untrusted CA or a certificate for another host name fails as kTlsError before a single
// request reaches the server. Certificates are generated at test time with the openssl
// CLI into a scratch directory (EC P-256: fast to generate).
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <httplib.h>

#include "fwdsink/forward_sink.h"
#include "support/central_process.h"
#include "support/it_support.h"

using namespace std::chrono_literals;
using fwdsink::Outcome;
using fwdsink::test::CentralProcess;
using fwdsink::test::SinkRun;
using fwdsink::test::WriteRows;

namespace {

constexpr const char* kDays = "2";
constexpr const char* kKeyOpts = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";

// Runs a shell command (openssl), output to `log`; returns whether it exited 0.
bool Run(const std::string& cmd, const std::filesystem::path& log) {
  const std::string full = cmd + " >>'" + log.string() + "' 2>&1";
  return std::system(full.c_str()) == 0;
}

// A throwaway PKI: two unrelated CAs and server certificates signed by the first.
struct Pki {
  std::filesystem::path dir;
  std::filesystem::path ca_crt, other_ca_crt;
  std::filesystem::path good_crt, good_key;    // CN/SAN localhost + IP 127.0.0.1
  std::filesystem::path wrong_crt, wrong_key;  // SAN other.example only

  explicit Pki(std::filesystem::path d) : dir(std::move(d)) {
    ca_crt = dir / "ca.crt";
    other_ca_crt = dir / "other-ca.crt";
    good_crt = dir / "localhost.crt";
    good_key = dir / "localhost.key";
    wrong_crt = dir / "other.crt";
    wrong_key = dir / "other.key";
  }

  // Generates everything; returns false (and the log names the step) on failure.
  bool Generate() {
    const auto log = dir / "openssl.log";
    auto q = [](const std::filesystem::path& p) { return "'" + p.string() + "'"; };
    auto make_ca = [&](const std::string& name, const std::filesystem::path& crt) {
      return Run("openssl req -x509 " + std::string(kKeyOpts) + " -days " + kDays + " -subj '/CN=" +
                     name + "' -keyout " + q(dir / (name + ".key")) + " -out " + q(crt) +
                     " -addext basicConstraints=critical,CA:TRUE"
                     " -addext keyUsage=critical,keyCertSign,cRLSign",
                 log);
    };
    auto make_leaf = [&](const std::string& cn, const std::string& san,
                         const std::filesystem::path& crt, const std::filesystem::path& key) {
      const auto csr = dir / (cn + ".csr");
      const auto ext = dir / (cn + ".ext");
      std::ofstream(ext) << "subjectAltName=" << san
                         << "\nbasicConstraints=CA:FALSE"
                            "\nkeyUsage=critical,digitalSignature"
                            "\nextendedKeyUsage=serverAuth\n";
      return Run("openssl req " + std::string(kKeyOpts) + " -subj '/CN=" + cn + "' -keyout " +
                     q(key) + " -out " + q(csr),
                 log) &&
             Run("openssl x509 -req -in " + q(csr) + " -CA " + q(ca_crt) + " -CAkey " +
                     q(dir / "test-ca.key") + " -CAcreateserial -days " + kDays + " -extfile " +
                     q(ext) + " -out " + q(crt),
                 log);
    };
    return make_ca("test-ca", ca_crt) && make_ca("other-ca", other_ca_crt) &&
           make_leaf("localhost", "DNS:localhost,IP:127.0.0.1", good_crt, good_key) &&
           make_leaf("other.example", "DNS:other.example", wrong_crt, wrong_key);
  }
};

// GET /stats over TLS. Verification is off: this is the test peeking at its own server.
nlohmann::json TlsStats(int port) {
  httplib::SSLClient cli("127.0.0.1", port);
  cli.enable_server_certificate_verification(false);
  cli.set_connection_timeout(2s);
  cli.set_read_timeout(5s);
  auto res = cli.Get("/stats");
  if (!res || res->status != 200) return nullptr;
  return nlohmann::json::parse(res->body, nullptr, /*allow_exceptions=*/false);
}

fwdsink::ForwardOptions HttpsOptions(const std::string& host, int port,
                                     const std::filesystem::path& ca) {
  fwdsink::ForwardOptions o;
  o.url = "https://" + host + ":" + std::to_string(port) + "/v1/ndjson";
  o.transport.ca_file = ca.string();
  o.transport.connect_timeout = 2s;
  o.transport.read_timeout = 10s;
  // A TLS failure must not be retried on the ladder; if it were, this keeps it short.
  o.backpressure.ladder = {100ms};
  o.backpressure.inline_budget = 1s;
  return o;
}

}  // namespace

TEST_CASE("HttpsDeliversOnlyToAVerifiedServer") {
  const auto dir = CentralProcess::ScratchDir("it_tls");
  Pki pki(dir / "pki");
  std::filesystem::create_directories(pki.dir);
  REQUIRE_MESSAGE(pki.Generate(), "openssl failed; see " << (pki.dir / "openssl.log"));
  const auto path = dir / "p.ndjson";
  const auto rows = WriteRows(path, 10);

  SUBCASE("trusted CA, name localhost: delivered") {
    CentralProcess central(dir / "good");
    REQUIRE(
        central.Start({"--tls-cert", pki.good_crt.string(), "--tls-key", pki.good_key.string()}));
    SinkRun run(HttpsOptions("localhost", central.port(), pki.ca_crt));
    const auto r = run.Forward("t", path);
    CHECK_MESSAGE(r.outcome == Outcome::kDelivered, r.message);
    CHECK(central.received_rows() == rows);
    CHECK(run.Named("forward.tls_error").empty());
    SUBCASE("and by IP 127.0.0.1, which the certificate also names") {
      SinkRun by_ip(HttpsOptions("127.0.0.1", central.port(), pki.ca_crt));
      CHECK(by_ip.Forward("t", path).outcome == Outcome::kDelivered);
      CHECK(central.received_rows() == rows);  // duplicates, stored once
    }
  }
  SUBCASE("an unrelated CA: tls error, nothing sent") {
    CentralProcess central(dir / "untrusted");
    REQUIRE(
        central.Start({"--tls-cert", pki.good_crt.string(), "--tls-key", pki.good_key.string()}));
    SinkRun run(HttpsOptions("localhost", central.port(), pki.other_ca_crt));
    const auto r = run.Forward("t", path);
    CHECK(r.outcome == Outcome::kTlsError);
    MESSAGE("untrusted CA: " << r.message);
    CHECK(r.message.find("certificate") != std::string::npos);  // says why
    CHECK(r.resume_offset == 0);
    CHECK(run.Named("forward.tls_error").size() == 1);
    CHECK(run.Named("forward.backpressure").empty());  // not retried on the ladder
    const auto stats = TlsStats(central.port());
    REQUIRE(stats.is_object());
    CHECK(stats["requests"] == 0);
    CHECK(stats["accepted_chunks"] == 0);
    CHECK(central.request_log().empty());
    CHECK(central.received_rows().empty());
  }
  SUBCASE("a certificate for another host name: tls error, nothing sent") {
    CentralProcess central(dir / "mismatch");
    REQUIRE(
        central.Start({"--tls-cert", pki.wrong_crt.string(), "--tls-key", pki.wrong_key.string()}));
    for (const std::string host : {"localhost", "127.0.0.1"}) {
      CAPTURE(host);
      SinkRun run(HttpsOptions(host, central.port(), pki.ca_crt));
      const auto r = run.Forward("t", path);
      CHECK(r.outcome == Outcome::kTlsError);
      MESSAGE("host mismatch (" << host << "): " << r.message);
      CHECK(r.message.find("does not match host '" + host + "'") != std::string::npos);
      CHECK(r.resume_offset == 0);
    }
    const auto stats = TlsStats(central.port());
    REQUIRE(stats.is_object());
    CHECK(stats["requests"] == 0);
    CHECK(central.request_log().empty());
    CHECK(central.received_rows().empty());
  }
}
