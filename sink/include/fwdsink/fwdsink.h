// SPDX-License-Identifier: Apache-2.0
/* fwdsink's C API: forward a spool's NDJSON partitions to an HTTP(S) ingest endpoint,
 * and write partitions into a spool, from C (C99) or any language that calls C.
 *
 * This is the stable ABI of libfwdsink.so.0: opaque handles, string keys, plain C types,
 * errors written into a caller's buffer. No C++ type or exception crosses it.
 * @ref LLP 0026#c-api
 *
 * Configuration follows librdkafka's style:
 *
 *   char err[512];
 *   fwdsink_conf_t *conf = fwdsink_conf_new();
 *   if (fwdsink_conf_set(conf, "spool_dir", "/var/spool/agent", err, sizeof err) !=
 *           FWDSINK_CONF_OK ||
 *       fwdsink_conf_set(conf, "url", "https://ingest.example/v1/ndjson", err,
 *                        sizeof err) != FWDSINK_CONF_OK) { ... err says why ... }
 *   fwdsink_t *fs = fwdsink_new(conf, err, sizeof err);   (conf now belongs to fs)
 *   fwdsink_start(fs);                  forwards on a thread of its own
 *   ...                                 fwdsink_close(fs) from a signal thread, say
 *   fwdsink_destroy(fs);
 *
 * The keys and their value syntax are those of the fwdsink daemon's configuration (one
 * table serves its flags, its config file, its environment and this API): spool_dir,
 * url, chunk_bytes, compression, inline_budget, token_file, header, ... `fwdsink
 * forward --help` lists them; the flag --chunk-bytes is the key chunk_bytes. Keys that
 * only the daemon uses (log_file, log_json, progress, once, ...) are refused with
 * FWDSINK_CONF_UNKNOWN and a message saying so; stats_interval is honoured (it paces the
 * stats callback).
 *
 * Threads: a fwdsink_conf_t and a fwdsink_writer_t are used by one thread at a time.
 * fwdsink_close() may be called from any thread (a signal-handling thread, typically),
 * any number of times, until fwdsink_destroy() starts; every other fwdsink_t call comes
 * from one thread at a time. The threads fwdsink creates block every signal; the thread
 * in fwdsink_run_once() is the caller's, so ignore or block SIGPIPE there (a peer
 * closing a TLS connection mid-write raises it), as the fwdsink daemon does.
 */
#ifndef FWDSINK_FWDSINK_H
#define FWDSINK_FWDSINK_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define FWDSINK_API __attribute__((visibility("default")))
#else
#define FWDSINK_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Configuration under construction: created by fwdsink_conf_new(), given to
 * fwdsink_new() (which takes it over) or freed by fwdsink_conf_destroy(). */
typedef struct fwdsink_conf_s fwdsink_conf_t;
/* A forwarder: one driver over one spool and one endpoint. */
typedef struct fwdsink_s fwdsink_t;
/* A producer's writer of partitions into one spool. */
typedef struct fwdsink_writer_s fwdsink_writer_t;

/* What fwdsink_conf_set() made of a key and its value (librdkafka's values). */
typedef enum {
  FWDSINK_CONF_UNKNOWN = -2, /* no such key (or a key only the daemon uses) */
  FWDSINK_CONF_INVALID = -1, /* the value is not valid for the key */
  FWDSINK_CONF_OK = 0
} fwdsink_conf_res_t;

/* fwdsink_run_once()'s results: those of `fwdsink forward --once` (sysexits(3)). */
/* clang-format off */
#define FWDSINK_EXIT_OK 0        /* everything delivered */
#define FWDSINK_EXIT_USAGE 64    /* misuse: a NULL handle, or the driver already started */
#define FWDSINK_EXIT_DATAERR 65  /* rows went to dead letters, or entries to quarantine/ */
#define FWDSINK_EXIT_IOERR 74    /* the spool cannot be read or written */
#define FWDSINK_EXIT_TEMPFAIL 75 /* something left for a later pass (respooled, errors,
                                    fwdsink_close() cut the pass short) */
#define FWDSINK_EXIT_NOPERM 77   /* the server refused the token after a refresh */
#define FWDSINK_EXIT_CONFIG 78   /* the server refuses our configuration, or every
                                    request of the pass failed the same permanent way */
/* clang-format on */

/* Event levels (syslog(3)'s numbers, as librdkafka's log callback uses them). */
#define FWDSINK_LOG_ERR 3     /* data or progress at stake: dead letters, auth, TLS */
#define FWDSINK_LOG_WARNING 4 /* backpressure, respools, splits: handled, worth seeing */
#define FWDSINK_LOG_INFO 6    /* deliveries, pacing, aborts */
#define FWDSINK_LOG_DEBUG 7   /* routine waits (pacing, the shared gate) */

/* Returns the library's version, "0.1.0" style (a static string). */
FWDSINK_API const char* fwdsink_version(void);

/* ---- configuration ------------------------------------------------------------- */

/* Returns a new, empty configuration (every key at its default), or NULL when out of
 * memory. */
FWDSINK_API fwdsink_conf_t* fwdsink_conf_new(void);
/* Returns a copy of `conf` (keys, callbacks and opaque pointer), or NULL. */
FWDSINK_API fwdsink_conf_t* fwdsink_conf_dup(const fwdsink_conf_t* conf);
/* Frees a configuration that was not given to fwdsink_new(). NULL is ignored. */
FWDSINK_API void fwdsink_conf_destroy(fwdsink_conf_t* conf);

/* Sets `key` to `value` (the daemon's syntax: "1m", "30s", "zstd", "30,60,120"). A
 * repeatable key ("header") adds one more value each call. On an error returns
 * FWDSINK_CONF_UNKNOWN or FWDSINK_CONF_INVALID and writes a NUL-terminated message
 * naming the key into errstr (truncated to errlen; errstr may be NULL when errlen is
 * 0); the configuration is then unchanged. */
FWDSINK_API fwdsink_conf_res_t fwdsink_conf_set(fwdsink_conf_t* conf, const char* key,
                                                const char* value, char* errstr, size_t errlen);

/* Sets the pointer passed to every callback as `opaque` (default NULL). */
FWDSINK_API void fwdsink_conf_set_opaque(fwdsink_conf_t* conf, void* opaque);

/* Sets the event callback: one call per event of the sink and the driver (a 429 and
 * the wait chosen, a respool, a dead letter, a delivery, ...), with its level
 * (FWDSINK_LOG_*) and the event as one line of JSON ({"ts":...,"event":
 * "forward.backpressure","label":...,"partition":...,...}; the names and fields are
 * the catalogue of fwdsink/telemetry.h). `json` is valid during the call only.
 * Thread: the driver's, i.e. the thread in fwdsink_run_once(), or the thread that
 * fwdsink_start() created (or a sending thread of the driver's own); never two calls
 * at once. The callback must not call
 * fwdsink_destroy(); it may call fwdsink_close(). Default: events are dropped. */
FWDSINK_API void fwdsink_conf_set_event_cb(fwdsink_conf_t* conf,
                                           void (*event_cb)(fwdsink_t* fs, int level,
                                                            const char* json, void* opaque));

/* Sets the stats callback: called every stats_interval (key, default 10s) with the
 * counters as one JSON object ({"ts":...,"event":"api.stats","label":...,
 * "partitions_left":N,"counters":{...},"driver":{...}}, the counters of
 * fwdsink/telemetry.h), of json_len bytes plus a NUL, valid during the call only.
 * Thread: a stats thread of the fwdsink_t's own, from fwdsink_new() until
 * fwdsink_destroy(); never two calls at once, none after fwdsink_destroy() returns.
 * Default: no stats thread. */
FWDSINK_API void fwdsink_conf_set_stats_cb(fwdsink_conf_t* conf,
                                           void (*stats_cb)(fwdsink_t* fs, const char* json,
                                                            size_t json_len, void* opaque));

/* ---- the forwarder ------------------------------------------------------------- */

/* Creates a forwarder from `conf`, which it takes over in every case (do not use or
 * free conf afterwards). Checks the required keys (spool_dir, url) and every rule
 * across keys, reads the header and basic-auth files, opens the spool and takes its
 * lock (held until fwdsink_destroy()). Returns NULL with the reason in errstr when any
 * of that fails (another process holding the spool's lock included). */
FWDSINK_API fwdsink_t* fwdsink_new(fwdsink_conf_t* conf, char* errstr, size_t errlen);

/* Forwards every ready partition once, on the calling thread, and returns
 * FWDSINK_EXIT_*: the codes of `fwdsink forward --once`. A pass cut short by
 * fwdsink_close() returns FWDSINK_EXIT_TEMPFAIL (the cursors are saved: nothing is
 * lost). Returns FWDSINK_EXIT_USAGE when fs is NULL or fwdsink_start() ran. */
FWDSINK_API int fwdsink_run_once(fwdsink_t* fs);

/* Starts forwarding on a thread of fwdsink's own: pass after pass, pausing between
 * passes as the driver's overload level says, until fwdsink_close(). Returns 0, or -1
 * when already started or closed. */
FWDSINK_API int fwdsink_start(fwdsink_t* fs);

/* Stops forwarding: cuts any pause or request short, leaves every cursor at its last
 * acknowledged chunk. Returns at once (it only signals); the driver stops within ~100
 * ms. Any thread, any number of times; NULL is ignored. */
FWDSINK_API void fwdsink_close(fwdsink_t* fs);

/* Closes (as fwdsink_close()), waits for the forwarding and stats threads, releases
 * the spool's lock and frees fs. Call it from a thread other than fwdsink's own
 * (not from a callback). NULL is ignored. */
FWDSINK_API void fwdsink_destroy(fwdsink_t* fs);

/* ---- the producer side --------------------------------------------------------- */

/* Opens a writer on spool directory `spool_dir` (its folders are created as needed).
 * Rows go into a partition in SPOOL/incoming/, sealed into SPOOL/ready/ (fsync, atomic
 * rename, fsync of the folder) before a row would take it past max_bytes (0: 64 MiB),
 * once its first row is max_age_ms old (0: 60 s; checked on append and poll), on
 * fwdsink_writer_seal() and on fwdsink_writer_close(). Unsealed rows are not visible to
 * the forwarder. Returns NULL with the reason in errstr. */
FWDSINK_API fwdsink_writer_t* fwdsink_writer_open(const char* spool_dir, uint64_t max_bytes,
                                                  uint64_t max_age_ms, char* errstr, size_t errlen);

/* Appends one row of len bytes (one NDJSON line; the '\n' is added when missing). An
 * empty row or one with an embedded '\n' is refused. Returns 0 when the row is accepted
 * (it will be in the partition when that is sealed), or -1 with the reason in errstr:
 * then THIS row was not accepted (append it again to keep it), and the rows accepted
 * before it are untouched: they stay in the open partition (a failed write, e.g. ENOSPC,
 * is cut back to the last whole row) and a later append or seal writes and seals them
 * once the disk has room. A seal due after an accepted row that fails is reported by the
 * next call, not by this one. */
FWDSINK_API int fwdsink_writer_append(fwdsink_writer_t* w, const char* row, size_t len,
                                      char* errstr, size_t errlen);

/* Seals the open partition if it is max_age_ms old: call it periodically so that a
 * quiet producer still hands its rows over. Returns 0, or -1 with the reason. */
FWDSINK_API int fwdsink_writer_poll(fwdsink_writer_t* w, char* errstr, size_t errlen);

/* Seals the open partition now. Returns 1 when one was sealed, 0 when there was no
 * row to seal, -1 with the reason in errstr: nothing was sealed and every accepted row
 * stays in the open partition (call it again once there is room), except when fsync
 * failed: the partition is then abandoned (errstr says "abandoned") and its rows lost. */
FWDSINK_API int fwdsink_writer_seal(fwdsink_writer_t* w, char* errstr, size_t errlen);

/* Seals what is open and frees w (freed even on an error). Returns 0, or -1 with the
 * reason in errstr: the open partition's rows are then lost to the spool (call
 * fwdsink_writer_seal() until it succeeds before closing to keep them). NULL is ignored
 * (returns 0). */
FWDSINK_API int fwdsink_writer_close(fwdsink_writer_t* w, char* errstr, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* FWDSINK_FWDSINK_H */
