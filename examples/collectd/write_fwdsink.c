// SPDX-License-Identifier: Apache-2.0
/* write_fwdsink: a collectd write plugin that hands every value list to fwdsink.
 *
 * Each value list becomes one NDJSON row (the fields of collectd's own JSON format:
 * time, interval, host, plugin, plugin_instance, type, type_instance, dsnames,
 * dstypes, values) appended with fwdsink's writer to a partition of the spool; the
 * partition is sealed every SealRows rows or SealInterval seconds, and a forwarder
 * started at init (fwdsink_start) ships the sealed partitions. At shutdown the open
 * partition is sealed and the forwarder closed (fwdsink_close): a sealed row is sent
 * then or after the next start, never lost, never stored twice by a deduplicating
 * server. Configured the way write_kafka is:
 *
 *   LoadPlugin write_fwdsink
 *   <Plugin write_fwdsink>
 *     Property "spool_dir" "/var/spool/collectd-fwdsink"
 *     Property "url" "https://ingest.example/v1/ndjson"
 *     SealRows 1000        # optional (default 1000)
 *     SealInterval 10      # optional, seconds (default 10)
 *   </Plugin>
 *
 * Every Property is a fwdsink configuration key (fwdsink_conf_set). Threads: collectd
 * calls write from several write threads at once, so the writer is behind a mutex;
 * fwdsink's events are logged through collectd from fwdsink's own thread.
 */
#include "collectd.h"

#include "plugin.h"
#include "utils/common/common.h"

#include <pthread.h>

#include <fwdsink/fwdsink.h>

#define PLUGIN "write_fwdsink"
#define ROW_MAX 8192

static fwdsink_conf_t *conf;       /* until init hands it to fwdsink_new */
static char *spool_dir;            /* the spool_dir Property, for the writer */
static int seal_rows = 1000;
static cdtime_t seal_interval = 0; /* 0: TIME_T_TO_CDTIME_T(10) at init */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static fwdsink_writer_t *writer; /* guarded by lock */
static int rows_open;            /* rows in the open partition; guarded by lock */
static fwdsink_t *forwarder;     /* set by init, cleared by shutdown */

static int conf_property(oconfig_item_t *ci) {
  char err[512];
  if (ci->values_num != 2 || ci->values[0].type != OCONFIG_TYPE_STRING ||
      ci->values[1].type != OCONFIG_TYPE_STRING) {
    ERROR(PLUGIN ": Property needs two strings: Property \"key\" \"value\"");
    return -1;
  }
  const char *key = ci->values[0].value.string;
  const char *value = ci->values[1].value.string;
  if (fwdsink_conf_set(conf, key, value, err, sizeof err) != FWDSINK_CONF_OK) {
    ERROR(PLUGIN ": Property \"%s\": %s", key, err);
    return -1;
  }
  if (strcmp(key, "spool_dir") == 0) {
    sfree(spool_dir);
    spool_dir = strdup(value);
  }
  return 0;
}

static int wf_config(oconfig_item_t *ci) {
  if (conf == NULL) conf = fwdsink_conf_new();
  if (conf == NULL) return -1;
  for (int i = 0; i < ci->children_num; ++i) {
    oconfig_item_t *child = ci->children + i;
    int status = 0;
    if (strcasecmp("Property", child->key) == 0)
      status = conf_property(child);
    else if (strcasecmp("SealRows", child->key) == 0)
      status = cf_util_get_int(child, &seal_rows);
    else if (strcasecmp("SealInterval", child->key) == 0)
      status = cf_util_get_cdtime(child, &seal_interval);
    else {
      ERROR(PLUGIN ": unknown option \"%s\"", child->key);
      status = -1;
    }
    if (status != 0) return status;
  }
  return 0;
}

/* fwdsink's events, into collectd's log at their level (fwdsink's thread). */
static void on_event(fwdsink_t *fs, int level, const char *json, void *opaque) {
  (void)fs;
  (void)opaque;
  plugin_log(level, PLUGIN ": %s", json);
}

static int wf_init(void) {
  char err[512];
  if (conf == NULL || spool_dir == NULL) {
    ERROR(PLUGIN ": Property \"spool_dir\" and Property \"url\" are required");
    return -1;
  }
  if (seal_rows <= 0) seal_rows = 1000;
  if (seal_interval == 0) seal_interval = TIME_T_TO_CDTIME_T(10);
  fwdsink_conf_set_event_cb(conf, on_event);
  pthread_mutex_lock(&lock);
  writer = fwdsink_writer_open(spool_dir, 0, CDTIME_T_TO_MS(seal_interval), err, sizeof err);
  pthread_mutex_unlock(&lock);
  if (writer == NULL) {
    ERROR(PLUGIN ": %s", err);
    return -1;
  }
  forwarder = fwdsink_new(conf, err, sizeof err); /* takes conf over */
  conf = NULL;
  if (forwarder == NULL) {
    ERROR(PLUGIN ": %s", err);
    return -1;
  }
  if (fwdsink_start(forwarder) != 0) {
    ERROR(PLUGIN ": cannot start the forwarder");
    return -1;
  }
  INFO(PLUGIN ": fwdsink %s forwarding %s", fwdsink_version(), spool_dir);
  return 0;
}

/* Appends `s` as a JSON string. Returns the new length, or -1 when out of room. */
static int put_string(char *buf, int len, const char *s) {
  if (len < 0 || len >= ROW_MAX - 2) return -1;
  buf[len++] = '"';
  for (; *s != '\0'; ++s) {
    unsigned char c = (unsigned char)*s;
    if (len >= ROW_MAX - 8) return -1;
    if (c == '"' || c == '\\') {
      buf[len++] = '\\';
      buf[len++] = (char)c;
    } else if (c < 0x20) {
      len += snprintf(buf + len, ROW_MAX - len, "\\u%04x", c);
    } else {
      buf[len++] = (char)c;
    }
  }
  buf[len++] = '"';
  buf[len] = '\0';
  return len;
}

static int put(char *buf, int len, const char *text) {
  if (len < 0) return -1;
  int n = snprintf(buf + len, ROW_MAX - len, "%s", text);
  return (n < 0 || n >= ROW_MAX - len) ? -1 : len + n;
}

static int put_value(char *buf, int len, int type, value_t v) {
  char num[64];
  if (type == DS_TYPE_GAUGE) {
    if (isfinite(v.gauge))
      snprintf(num, sizeof num, "%.17g", v.gauge);
    else
      snprintf(num, sizeof num, "null");
  } else if (type == DS_TYPE_COUNTER) {
    snprintf(num, sizeof num, "%llu", (unsigned long long)v.counter);
  } else if (type == DS_TYPE_DERIVE) {
    snprintf(num, sizeof num, "%" PRIi64, v.derive);
  } else {
    snprintf(num, sizeof num, "%" PRIu64, v.absolute);
  }
  return put(buf, len, num);
}

/* One value list as one row of collectd's JSON fields. Returns its length or -1. */
static int format_row(char *buf, const data_set_t *ds, const value_list_t *vl) {
  char head[128];
  snprintf(head, sizeof head, "{\"time\":%.3f,\"interval\":%.3f", CDTIME_T_TO_DOUBLE(vl->time),
           CDTIME_T_TO_DOUBLE(vl->interval));
  int len = put(buf, 0, head);
  const char *names[] = {"host", "plugin", "plugin_instance", "type", "type_instance"};
  const char *values[] = {vl->host, vl->plugin, vl->plugin_instance, vl->type,
                          vl->type_instance};
  for (int i = 0; i < 5; ++i) {
    len = put(buf, len, ",\"");
    len = put(buf, len, names[i]);
    len = put(buf, len, "\":");
    len = put_string(buf, len, values[i]);
  }
  len = put(buf, len, ",\"dsnames\":[");
  for (size_t i = 0; i < ds->ds_num; ++i) {
    if (i > 0) len = put(buf, len, ",");
    len = put_string(buf, len, ds->ds[i].name);
  }
  len = put(buf, len, "],\"dstypes\":[");
  for (size_t i = 0; i < ds->ds_num; ++i) {
    if (i > 0) len = put(buf, len, ",");
    len = put_string(buf, len, DS_TYPE_TO_STRING(ds->ds[i].type));
  }
  len = put(buf, len, "],\"values\":[");
  for (size_t i = 0; i < ds->ds_num && i < vl->values_len; ++i) {
    if (i > 0) len = put(buf, len, ",");
    len = put_value(buf, len, ds->ds[i].type, vl->values[i]);
  }
  return put(buf, len, "]}");
}

/* Seals the open partition; called with lock held. */
static int seal_locked(void) {
  char err[512];
  if (writer == NULL) return 0;
  if (fwdsink_writer_seal(writer, err, sizeof err) < 0) {
    ERROR(PLUGIN ": seal: %s", err);
    return -1;
  }
  rows_open = 0;
  return 0;
}

static int wf_write(const data_set_t *ds, const value_list_t *vl, user_data_t *ud) {
  char row[ROW_MAX];
  char err[512];
  (void)ud;
  int len = format_row(row, ds, vl);
  if (len < 0) {
    WARNING(PLUGIN ": a value list of %s/%s does not fit in %d bytes: skipped", vl->plugin,
            vl->type, ROW_MAX);
    return -1;
  }
  int status = 0;
  pthread_mutex_lock(&lock);
  if (writer == NULL) {
    status = -1;
  } else if (fwdsink_writer_append(writer, row, (size_t)len, err, sizeof err) != 0) {
    ERROR(PLUGIN ": append: %s", err);
    status = -1;
  } else if (++rows_open >= seal_rows) {
    status = seal_locked();
  }
  pthread_mutex_unlock(&lock);
  return status;
}

/* SealInterval also applies to a quiet writer: this runs every SealInterval. */
static int wf_poll(user_data_t *ud) {
  char err[512];
  (void)ud;
  int status = 0;
  pthread_mutex_lock(&lock);
  if (writer != NULL && fwdsink_writer_poll(writer, err, sizeof err) != 0) {
    ERROR(PLUGIN ": poll: %s", err);
    status = -1;
  }
  pthread_mutex_unlock(&lock);
  return status;
}

static int wf_flush(cdtime_t timeout, const char *identifier, user_data_t *ud) {
  (void)timeout;
  (void)identifier;
  (void)ud;
  pthread_mutex_lock(&lock);
  int status = seal_locked();
  pthread_mutex_unlock(&lock);
  return status;
}

static int wf_shutdown(void) {
  char err[512];
  /* Seal first: those rows go on the next start if not now. Then stop promptly. */
  pthread_mutex_lock(&lock);
  if (writer != NULL && fwdsink_writer_close(writer, err, sizeof err) != 0)
    ERROR(PLUGIN ": seal at shutdown: %s", err);
  writer = NULL;
  pthread_mutex_unlock(&lock);
  fwdsink_close(forwarder);
  fwdsink_destroy(forwarder);
  forwarder = NULL;
  fwdsink_conf_destroy(conf);
  conf = NULL;
  sfree(spool_dir);
  return 0;
}

void module_register(void) {
  plugin_register_complex_config(PLUGIN, wf_config);
  plugin_register_init(PLUGIN, wf_init);
  plugin_register_write(PLUGIN, wf_write, NULL);
  plugin_register_flush(PLUGIN, wf_flush, NULL);
  plugin_register_complex_read(NULL, PLUGIN, wf_poll, TIME_T_TO_CDTIME_T(1), NULL);
  plugin_register_shutdown(PLUGIN, wf_shutdown);
}
