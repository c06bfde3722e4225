// SPDX-License-Identifier: Apache-2.0
/* The C API exercised from C (built with gcc -std=c99 -Wall -Wextra -Werror -pedantic).
 * One program, one scenario per sub-command; tests/integration/capi_test.cc runs them
 * against fwdsink-central and checks what arrived. Each prints what it saw and exits 0
 * when its own checks pass, 1 otherwise.
 *
 *   capi_test conf                      every key accepted; bad value, unknown key and a
 *                                       daemon-only key refused with the message in errstr
 *   capi_test once URL SPOOL ROWS       writer rows in 3 partitions, then fwdsink_run_once
 *   capi_test close URL SPOOL           run_once in a 429 Retry-After pause; another thread
 *                                       calls fwdsink_close; prints the code and the delay
 *   capi_test start URL SPOOL ROWS      fwdsink_start, then the writer adds partitions while
 *                                       the driver runs; waits for ready/ to empty
 *   capi_test busy SPOOL                a second fwdsink_new on a locked spool is refused
 *                                       naming the holder; once it is gone, one is created
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <fwdsink/fwdsink.h>

#define ERRLEN 512

static int failures = 0;

#define CHECK(cond)                                                     \
  do {                                                                  \
    if (!(cond)) {                                                      \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                       \
    }                                                                   \
  } while (0)

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms) {
  struct timespec ts;
  ts.tv_sec = ms / 1000;
  ts.tv_nsec = (ms % 1000) * 1000000L;
  nanosleep(&ts, NULL);
}

/* Every key of the daemon's table that the library uses, with a valid value. */
static const char *const kKeys[][2] = {
    {"spool_dir", "/tmp/capi-conf-spool"},
    {"url", "http://127.0.0.1:9/ingest"},
    {"url", "http://127.0.0.1:10/ingest"}, /* a second url is a fallback */
    {"failover_after", "20"},
    {"failover_failures", "3"},
    {"failback_after", "2m"},
    {"concurrency", "adaptive"},
    {"max_concurrency", "4"},
    {"max_dead_bytes", "1g"},
    {"max_dead_age", "168h"},
    {"token_file", "/tmp/capi-no-such-token"},
    {"chunk_bytes", "256k"},
    {"compression", "gzip"},
    {"zstd_level", "3"},
    {"ladder", "1,2,3"},
    {"max_wait", "10"},
    {"inline_budget", "30s"},
    {"jitter", "0.25"},
    {"pacing", "off"},
    {"horizon", "1h"},
    {"poll", "250ms"},
    {"label", "capi"},
    {"key_header", "X-Batch-Id"},
    {"ca_file", "/etc/ssl/certs/ca-certificates.crt"},
    {"connect_timeout", "2"},
    {"read_timeout", "10"},
    {"header", "X-Tenant: a"},
    {"header_file", "X-Secret: /tmp/capi-no-such-secret"},
    {"basic_auth_file", "/tmp/capi-no-such-auth"},
    {"client_cert", "/tmp/capi-cert.pem"},
    {"client_key", "/tmp/capi-key.pem"},
    {"proxy", "http://127.0.0.1:3128"},
    {"key_param", "insert_deduplication_token"},
    {"no_key_header", "true"},
    {"profile", "clickhouse"},
    {"retry_status", "408,425,500,502,504"},
    {"min_throughput", "16k"},
    {"response_timeout", "20"},
    {"keep_alive", "45"},
    {"expect_continue_bytes", "128k"},
    {"pack_below", "0"},
    {"pack_linger", "0"},
    {"max_split_requests", "64"},
    {"window", "8"},
    {"max_inflight_bytes", "16m"},
    {"stats_interval", "5s"},
};

static int cmd_conf(void) {
  char err[ERRLEN];
  size_t i;
  fwdsink_conf_t *conf = fwdsink_conf_new();
  fwdsink_conf_t *dup;
  CHECK(conf != NULL);
  for (i = 0; i < sizeof kKeys / sizeof kKeys[0]; ++i) {
    err[0] = '\0';
    if (fwdsink_conf_set(conf, kKeys[i][0], kKeys[i][1], err, sizeof err) == FWDSINK_CONF_OK) {
      printf("accepted %s\n", kKeys[i][0]);
    } else {
      fprintf(stderr, "refused %s=%s: %s\n", kKeys[i][0], kKeys[i][1], err);
      ++failures;
    }
  }
  /* A bad value: INVALID, and the message names the key and the value's origin. */
  err[0] = '\0';
  CHECK(fwdsink_conf_set(conf, "chunk_bytes", "4x", err, sizeof err) == FWDSINK_CONF_INVALID);
  printf("bad value: %s\n", err);
  CHECK(strstr(err, "chunk_bytes") != NULL);
  CHECK(strstr(err, "4x") != NULL);
  /* An unknown key: UNKNOWN, named. */
  err[0] = '\0';
  CHECK(fwdsink_conf_set(conf, "chunk_bites", "1m", err, sizeof err) == FWDSINK_CONF_UNKNOWN);
  printf("unknown key: %s\n", err);
  CHECK(strstr(err, "chunk_bites") != NULL);
  /* A key only the daemon uses: UNKNOWN too, saying so. */
  err[0] = '\0';
  CHECK(fwdsink_conf_set(conf, "log_file", "/tmp/x.log", err, sizeof err) ==
        FWDSINK_CONF_UNKNOWN);
  printf("daemon-only key: %s\n", err);
  CHECK(strstr(err, "log_file") != NULL && strstr(err, "daemon") != NULL);
  /* A short buffer gets a truncated, terminated message; NULL/0 is allowed. */
  {
    char tiny[8];
    memset(tiny, 'x', sizeof tiny);
    CHECK(fwdsink_conf_set(conf, "chunk_bytes", "4x", tiny, sizeof tiny) ==
          FWDSINK_CONF_INVALID);
    CHECK(tiny[7] == '\0' && strlen(tiny) == 7);
    CHECK(fwdsink_conf_set(conf, "chunk_bytes", "4x", NULL, 0) == FWDSINK_CONF_INVALID);
    CHECK(fwdsink_conf_set(conf, NULL, "x", err, sizeof err) == FWDSINK_CONF_INVALID);
  }
  dup = fwdsink_conf_dup(conf);
  CHECK(dup != NULL);
  fwdsink_conf_destroy(dup);
  fwdsink_conf_destroy(conf);
  fwdsink_conf_destroy(NULL);
  /* fwdsink_new without the required keys: NULL and a message naming them. */
  conf = fwdsink_conf_new();
  err[0] = '\0';
  CHECK(fwdsink_new(conf, err, sizeof err) == NULL);
  printf("missing keys: %s\n", err);
  CHECK(strstr(err, "url") != NULL || strstr(err, "spool") != NULL);
  CHECK(fwdsink_version() != NULL && strlen(fwdsink_version()) > 0);
  printf("version %s\n", fwdsink_version());
  return failures ? 1 : 0;
}

/* Counts delivered events and checks every event is one JSON object. */
struct events {
  pthread_mutex_t mu;
  int delivered;
  int backpressure;
  int total;
  int stats;
};

static void on_event(fwdsink_t *fs, int level, const char *json, void *opaque) {
  struct events *ev = (struct events *)opaque;
  (void)fs;
  pthread_mutex_lock(&ev->mu);
  ++ev->total;
  if (json[0] != '{' || json[strlen(json) - 1] != '}') ++failures;
  if (level < FWDSINK_LOG_ERR || level > FWDSINK_LOG_DEBUG) ++failures;
  if (strstr(json, "\"event\":\"forward.delivered\"")) ++ev->delivered;
  if (strstr(json, "\"event\":\"forward.backpressure\"")) ++ev->backpressure;
  pthread_mutex_unlock(&ev->mu);
}

static void on_stats(fwdsink_t *fs, const char *json, size_t len, void *opaque) {
  struct events *ev = (struct events *)opaque;
  (void)fs;
  pthread_mutex_lock(&ev->mu);
  ++ev->stats;
  if (strlen(json) != len || !strstr(json, "\"event\":\"api.stats\"") ||
      !strstr(json, "\"counters\"")) {
    ++failures;
  }
  pthread_mutex_unlock(&ev->mu);
}

/* Writes `rows` rows into `parts` sealed partitions; rows are numbered from `first`. */
static int write_rows(const char *spool, int first, int rows, int parts) {
  char err[ERRLEN];
  char row[128];
  int i;
  int sealed = 0;
  fwdsink_writer_t *w = fwdsink_writer_open(spool, 0, 0, err, sizeof err);
  if (w == NULL) {
    fprintf(stderr, "writer_open: %s\n", err);
    return -1;
  }
  for (i = 0; i < rows; ++i) {
    int n = snprintf(row, sizeof row, "{\"seq\":%d,\"source\":\"capi_test\"}", first + i);
    if (fwdsink_writer_append(w, row, (size_t)n, err, sizeof err) != 0) {
      fprintf(stderr, "append: %s\n", err);
      fwdsink_writer_close(w, NULL, 0);
      return -1;
    }
    if ((i + 1) % ((rows + parts - 1) / parts) == 0) {
      int rc = fwdsink_writer_seal(w, err, sizeof err);
      if (rc < 0) fprintf(stderr, "seal: %s\n", err);
      sealed += rc > 0;
    }
  }
  /* An embedded newline is refused, and says so. */
  if (fwdsink_writer_append(w, "{\"a\":1}\n{\"b\":2}", 15, err, sizeof err) != -1) ++failures;
  if (fwdsink_writer_close(w, err, sizeof err) != 0) {
    fprintf(stderr, "writer_close: %s\n", err);
    return -1;
  }
  return sealed;
}

static fwdsink_t *make(const char *url, const char *spool, const char *extra[][2],
                       struct events *ev) {
  char err[ERRLEN];
  fwdsink_conf_t *conf = fwdsink_conf_new();
  fwdsink_t *fs;
  int i;
  if (fwdsink_conf_set(conf, "spool_dir", spool, err, sizeof err) != FWDSINK_CONF_OK ||
      fwdsink_conf_set(conf, "url", url, err, sizeof err) != FWDSINK_CONF_OK) {
    fprintf(stderr, "conf: %s\n", err);
    fwdsink_conf_destroy(conf);
    return NULL;
  }
  for (i = 0; extra != NULL && extra[i][0] != NULL; ++i) {
    if (fwdsink_conf_set(conf, extra[i][0], extra[i][1], err, sizeof err) != FWDSINK_CONF_OK) {
      fprintf(stderr, "conf %s: %s\n", extra[i][0], err);
      fwdsink_conf_destroy(conf);
      return NULL;
    }
  }
  if (ev != NULL) {
    fwdsink_conf_set_opaque(conf, ev);
    fwdsink_conf_set_event_cb(conf, on_event);
    fwdsink_conf_set_stats_cb(conf, on_stats);
  }
  fs = fwdsink_new(conf, err, sizeof err);
  if (fs == NULL) fprintf(stderr, "fwdsink_new: %s\n", err);
  return fs;
}

static int cmd_once(const char *url, const char *spool, int rows) {
  struct events ev;
  const char *extra[][2] = {{"chunk_bytes", "4k"}, {"stats_interval", "50ms"}, {NULL, NULL}};
  fwdsink_t *fs;
  int code;
  int i;
  memset(&ev, 0, sizeof ev);
  pthread_mutex_init(&ev.mu, NULL);
  CHECK(write_rows(spool, 0, rows, 3) == 3);
  fs = make(url, spool, extra, &ev);
  CHECK(fs != NULL);
  if (fs == NULL) return 1;
  code = fwdsink_run_once(fs);
  printf("run_once %d\n", code);
  CHECK(code == FWDSINK_EXIT_OK);
  /* Nothing left: a second pass is clean too. */
  CHECK(fwdsink_run_once(fs) == FWDSINK_EXIT_OK);
  /* Stats come from the handle's own thread: wait for one (bounded), not a fixed time. */
  for (i = 0; i < 500; ++i) {
    int stats;
    pthread_mutex_lock(&ev.mu);
    stats = ev.stats;
    pthread_mutex_unlock(&ev.mu);
    if (stats >= 1) break;
    sleep_ms(10);
  }
  fwdsink_destroy(fs);
  printf("events %d delivered %d stats %d\n", ev.total, ev.delivered, ev.stats);
  CHECK(ev.delivered == 3);
  CHECK(ev.stats >= 1);
  pthread_mutex_destroy(&ev.mu);
  return failures ? 1 : 0;
}

struct closer {
  fwdsink_t *fs;
  struct events *ev;
  double closed_at;
};

/* Waits until the sink is in its Retry-After pause, then closes it. */
static void *close_later(void *arg) {
  struct closer *c = (struct closer *)arg;
  int i;
  for (i = 0; i < 1000; ++i) {
    int seen;
    pthread_mutex_lock(&c->ev->mu);
    seen = c->ev->backpressure;
    pthread_mutex_unlock(&c->ev->mu);
    if (seen > 0) break;
    sleep_ms(10);
  }
  sleep_ms(200); /* well inside the 30 s pause */
  c->closed_at = now_s();
  fwdsink_close(c->fs);
  fwdsink_close(c->fs); /* idempotent */
  return NULL;
}

static int cmd_close(const char *url, const char *spool) {
  struct events ev;
  struct closer c;
  pthread_t t;
  const char *extra[][2] = {{"inline_budget", "5m"}, {"max_wait", "60"}, {NULL, NULL}};
  double returned;
  int code;
  memset(&ev, 0, sizeof ev);
  pthread_mutex_init(&ev.mu, NULL);
  CHECK(write_rows(spool, 0, 10, 1) == 1);
  c.fs = make(url, spool, extra, &ev);
  c.ev = &ev;
  c.closed_at = 0;
  if (c.fs == NULL) return 1;
  CHECK(pthread_create(&t, NULL, close_later, &c) == 0);
  code = fwdsink_run_once(c.fs);
  returned = now_s();
  pthread_join(t, NULL);
  printf("run_once %d after close %.3f s backpressure %d\n", code, returned - c.closed_at,
         ev.backpressure);
  CHECK(ev.backpressure >= 1);
  CHECK(code == FWDSINK_EXIT_TEMPFAIL);
  CHECK(returned - c.closed_at < 0.5);
  /* Closed: a later pass stops at once, and start refuses. */
  CHECK(fwdsink_run_once(c.fs) == FWDSINK_EXIT_TEMPFAIL);
  CHECK(fwdsink_start(c.fs) == -1);
  fwdsink_destroy(c.fs);
  pthread_mutex_destroy(&ev.mu);
  return failures ? 1 : 0;
}

static int count_ready(const char *spool) {
  char path[4096];
  DIR *d;
  struct dirent *e;
  int n = 0;
  snprintf(path, sizeof path, "%s/ready", spool);
  d = opendir(path);
  if (d == NULL) return -1;
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    if (e->d_name[0] != '.' && len > 7 && strcmp(e->d_name + len - 7, ".ndjson") == 0) ++n;
  }
  closedir(d);
  return n;
}

static int cmd_start(const char *url, const char *spool, int rows) {
  struct events ev;
  const char *extra[][2] = {{"poll", "50ms"}, {NULL, NULL}};
  fwdsink_t *fs;
  int round;
  int i;
  memset(&ev, 0, sizeof ev);
  pthread_mutex_init(&ev.mu, NULL);
  fs = make(url, spool, extra, &ev);
  if (fs == NULL) return 1;
  CHECK(fwdsink_start(fs) == 0);
  CHECK(fwdsink_start(fs) == -1);                 /* already started */
  CHECK(fwdsink_run_once(fs) == FWDSINK_EXIT_USAGE); /* the driver has its own thread */
  /* The producer writes while the driver runs: 4 rounds of partitions. */
  for (round = 0; round < 4; ++round) {
    CHECK(write_rows(spool, round * rows, rows, 2) == 2);
    sleep_ms(30);
  }
  for (i = 0; i < 500 && count_ready(spool) != 0; ++i) sleep_ms(20);
  printf("ready left %d delivered %d\n", count_ready(spool), ev.delivered);
  CHECK(count_ready(spool) == 0);
  fwdsink_close(fs);
  fwdsink_destroy(fs);
  CHECK(ev.delivered == 8);
  pthread_mutex_destroy(&ev.mu);
  return failures ? 1 : 0;
}

/* A fresh configuration for a forwarder on `spool` (fwdsink_new takes it over). */
static fwdsink_conf_t *busy_conf(const char *spool) {
  char err[ERRLEN];
  fwdsink_conf_t *conf = fwdsink_conf_new();
  fwdsink_conf_set(conf, "spool_dir", spool, err, sizeof err);
  fwdsink_conf_set(conf, "url", "http://127.0.0.1:9/ingest", err, sizeof err);
  return conf;
}

static int cmd_busy(const char *spool) {
  char err[ERRLEN];
  char expected[3 * ERRLEN];
  fwdsink_t *a = make("http://127.0.0.1:9/ingest", spool, NULL, NULL);
  fwdsink_t *b;
  CHECK(a != NULL);
  /* The holder is this process: its pid is in the lock file, and in the message. */
  snprintf(expected, sizeof expected,
           "spool_dir: spool %s is locked by another fwdsink (pid %ld, lock file %s/lock)", spool,
           (long)getpid(), spool);
  strcpy(err, "untouched");
  b = fwdsink_new(busy_conf(spool), err, sizeof err);
  printf("second: %s\n", err);
  CHECK(b == NULL);
  CHECK(strcmp(err, expected) == 0);
  fwdsink_destroy(b);
  /* The twin: once the holder is destroyed (the lock released), the next one gets the
   * spool, and says nothing in errstr. */
  fwdsink_destroy(a);
  strcpy(err, "untouched");
  b = fwdsink_new(busy_conf(spool), err, sizeof err);
  printf("after the holder: %s\n", b != NULL ? "created" : err);
  CHECK(b != NULL);
  CHECK(strcmp(err, "untouched") == 0 || err[0] == '\0');
  fwdsink_destroy(b);
  fwdsink_destroy(NULL);
  fwdsink_close(NULL);
  return failures ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "conf") == 0) return cmd_conf();
  if (argc >= 5 && strcmp(argv[1], "once") == 0) return cmd_once(argv[2], argv[3], atoi(argv[4]));
  if (argc >= 4 && strcmp(argv[1], "close") == 0) return cmd_close(argv[2], argv[3]);
  if (argc >= 5 && strcmp(argv[1], "start") == 0) {
    return cmd_start(argv[2], argv[3], atoi(argv[4]));
  }
  if (argc >= 3 && strcmp(argv[1], "busy") == 0) return cmd_busy(argv[2]);
  fprintf(stderr, "usage: capi_test conf|once|close|start|busy ...\n");
  return 2;
}
