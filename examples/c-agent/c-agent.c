// SPDX-License-Identifier: Apache-2.0
/* c-agent: a tiny telemetry agent in C. It samples the load average into NDJSON rows,
 * writes them into a spool with fwdsink's writer (sealing a partition every 100 rows
 * or 5 s), and forwards the spool with fwdsink_start() until SIGTERM or SIGINT, when
 * it seals what it has and stops with fwdsink_close().
 *
 *   c-agent SPOOL_DIR URL [KEY=VALUE ...]      e.g. chunk_bytes=256k compression=gzip
 *
 * Built against an installed fwdsink with pkg-config alone (see Makefile).
 */
#define _POSIX_C_SOURCE 200809L

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <fwdsink/fwdsink.h>

static volatile sig_atomic_t stop = 0;

static void on_signal(int sig) {
  (void)sig;
  stop = 1; /* the main loop calls fwdsink_close(): not async-signal-safe to do here */
}

/* fwdsink's events, one JSON line each, on stderr (called on fwdsink's thread). */
static void on_event(fwdsink_t *fs, int level, const char *json, void *opaque) {
  (void)fs;
  (void)opaque;
  fprintf(stderr, "<%d> %s\n", level, json);
}

static int configure(fwdsink_conf_t *conf, const char *key, const char *value) {
  char err[512];
  if (fwdsink_conf_set(conf, key, value, err, sizeof err) != FWDSINK_CONF_OK) {
    fprintf(stderr, "c-agent: %s\n", err);
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  char err[512];
  char row[256];
  struct sigaction sa;
  fwdsink_conf_t *conf;
  fwdsink_t *fs;
  fwdsink_writer_t *w;
  unsigned long seq = 0;
  int i;

  if (argc < 3) {
    fprintf(stderr, "usage: c-agent SPOOL_DIR URL [KEY=VALUE ...]\n");
    return 64;
  }
  conf = fwdsink_conf_new();
  if (configure(conf, "spool_dir", argv[1]) || configure(conf, "url", argv[2])) {
    fwdsink_conf_destroy(conf);
    return 64;
  }
  for (i = 3; i < argc; ++i) {
    char *eq = strchr(argv[i], '=');
    if (eq == NULL) {
      fprintf(stderr, "c-agent: %s: expected KEY=VALUE\n", argv[i]);
      fwdsink_conf_destroy(conf);
      return 64;
    }
    *eq = '\0';
    if (configure(conf, argv[i], eq + 1)) {
      fwdsink_conf_destroy(conf);
      return 64;
    }
  }
  fwdsink_conf_set_event_cb(conf, on_event);

  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

  w = fwdsink_writer_open(argv[1], 0, 5000, err, sizeof err);
  if (w == NULL) {
    fprintf(stderr, "c-agent: %s\n", err);
    fwdsink_conf_destroy(conf);
    return 74;
  }
  fs = fwdsink_new(conf, err, sizeof err); /* conf belongs to fs now */
  if (fs == NULL || fwdsink_start(fs) != 0) {
    fprintf(stderr, "c-agent: %s\n", fs == NULL ? err : "cannot start the forwarder");
    fwdsink_writer_close(w, NULL, 0);
    fwdsink_destroy(fs);
    return 78;
  }
  fprintf(stderr, "c-agent: fwdsink %s forwarding %s to %s\n", fwdsink_version(), argv[1],
          argv[2]);

  while (!stop) {
    double load[3] = {0, 0, 0};
    struct timespec ts = {0, 10 * 1000 * 1000}; /* a row every 10 ms */
    FILE *f = fopen("/proc/loadavg", "r");
    int n;
    if (f != NULL) {
      if (fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = -1;
      fclose(f);
    }
    n = snprintf(row, sizeof row,
                 "{\"agent\":\"c-agent\",\"pid\":%ld,\"seq\":%lu,\"time\":%ld,"
                 "\"load1\":%.2f,\"load5\":%.2f,\"load15\":%.2f}",
                 (long)getpid(), seq, (long)time(NULL), load[0], load[1], load[2]);
    if (fwdsink_writer_append(w, row, (size_t)n, err, sizeof err) != 0) {
      fprintf(stderr, "c-agent: %s\n", err);
      break;
    }
    ++seq;
    if (seq % 100 == 0 && fwdsink_writer_seal(w, err, sizeof err) < 0) {
      fprintf(stderr, "c-agent: %s\n", err);
      break;
    }
    nanosleep(&ts, NULL);
  }

  /* Seal first (those rows go now or on the next start), then stop forwarding. */
  if (fwdsink_writer_close(w, err, sizeof err) != 0) fprintf(stderr, "c-agent: %s\n", err);
  fwdsink_close(fs);
  fwdsink_destroy(fs);
  fprintf(stderr, "c-agent: stopped after %lu rows\n", seq);
  return 0;
}
