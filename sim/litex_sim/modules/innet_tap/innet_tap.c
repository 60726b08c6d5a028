/* innet_tap: a litex_sim module joining a TAP device to a W-byte-wide frame stream.
 *
 * Unlike LiteX's `ethernet` module, which reads the TAP from the libevent loop that sim.c runs only every
 * 1000 ticks (500 clock cycles), this module polls the TAP itself, without blocking, every `poll` cycles
 * (default 8) while no frame is being received, so a request is seen within a few cycles of its arrival.
 * Frames move W bytes a cycle (W = width of the data pads: 1, 2, 4 or 8), with `last` and a one-hot
 * `last_be` on the final beat (LiteEth's PHY layout). Every session keeps its own clock-edge state.
 *
 * Pads of interface "eth" (any index): sink_valid, sink_data, sink_last, sink_last_be (TAP -> SoC) and
 * source_valid, source_data, source_last, source_last_be (SoC -> TAP; always accepted); optional soc_ip and
 * soc_mac, driven with the SoC's management IPv4 address and MAC (so that one build can run as several SoCs).
 * Arguments: interface (TAP name), ip (its address, /24; absent or "": none, for a TAP on a bridge), poll
 * (cycles between TAP polls), soc_ip (dotted), soc_mac (12 hex digits).
 */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include <json-c/json.h>
#include "tapcfg.h"
#include "error.h"
#include "modules.h"

#define FRAME_MAX 2048
#define FRAME_MIN 60

struct session_s {
  struct pad_s *rx_valid, *rx_data, *rx_last, *rx_last_be;   /* into the SoC */
  struct pad_s *tx_valid, *tx_data, *tx_last, *tx_last_be;   /* out of the SoC */
  char *sys_clk;
  clk_edge_state_t edge;
  tapcfg_t *tapcfg;
  unsigned width, poll, countdown;
  uint64_t soc_ip, soc_mac;
  struct pad_s *soc_ip_pad, *soc_mac_pad;
  uint8_t rx_buf[FRAME_MAX];
  int rx_len, rx_pos;
  uint8_t tx_buf[FRAME_MAX + 8];
  int tx_len;
};

static const char default_mac[6] = {0xaa, 0xb6, 0x24, 0x69, 0x77, 0x21};

static uint64_t pad_get(struct pad_s *p) {
  if (p->len <= 8) return *(uint8_t *)p->signal;
  if (p->len <= 16) return *(uint16_t *)p->signal;
  if (p->len <= 32) return *(uint32_t *)p->signal;
  return *(uint64_t *)p->signal;
}

static void pad_set(struct pad_s *p, uint64_t v) {
  if (p->len <= 8) *(uint8_t *)p->signal = v;
  else if (p->len <= 16) *(uint16_t *)p->signal = v;
  else if (p->len <= 32) *(uint32_t *)p->signal = v;
  else *(uint64_t *)p->signal = v;
}

static char *json_arg(json_object *obj, const char *key, const char *fallback) {
  json_object *v = NULL;
  if (json_object_object_get_ex(obj, key, &v)) return strdup(json_object_get_string(v));
  return fallback ? strdup(fallback) : NULL;
}

static int innet_tap_start(void *base) {
  (void)base;
  return RC_OK;
}

static int innet_tap_new(void **sess, char *args) {
  struct session_s *s = calloc(1, sizeof(*s));
  json_object *obj = json_tokener_parse(args);
  char *ifname, *ip, *poll, *soc_ip, *soc_mac;
  if (!s || !obj) {
    eprintf("innet_tap: bad arguments %s\n", args);
    return RC_INVARG;
  }
  ifname = json_arg(obj, "interface", NULL);
  ip = json_arg(obj, "ip", NULL);
  poll = json_arg(obj, "poll", "8");
  soc_ip = json_arg(obj, "soc_ip", "192.168.1.50");
  soc_mac = json_arg(obj, "soc_mac", "10e2d5000000");
  json_object_put(obj);
  if (!ifname) {
    eprintf("innet_tap: needs \"interface\"\n");
    return RC_INVARG;
  }
  unsigned a, b, c, d;
  if (sscanf(soc_ip, "%u.%u.%u.%u", &a, &b, &c, &d) != 4 || a > 255 || b > 255 || c > 255 || d > 255) {
    eprintf("innet_tap: bad soc_ip %s\n", soc_ip);
    return RC_INVARG;
  }
  s->soc_ip = ((uint64_t)a << 24) | (b << 16) | (c << 8) | d;
  s->soc_mac = strtoull(soc_mac, NULL, 16);
  free(soc_ip);
  free(soc_mac);
  s->poll = atoi(poll) > 0 ? atoi(poll) : 1;
  s->tapcfg = tapcfg_init();
  if (tapcfg_start(s->tapcfg, ifname, 0) < 0) {
    eprintf("innet_tap: cannot create TAP %s\n", ifname);
    return RC_ERROR;
  }
  tapcfg_iface_set_hwaddr(s->tapcfg, default_mac, 6);
  if (ip && ip[0]) tapcfg_iface_set_ipv4(s->tapcfg, ip, 24);
  tapcfg_iface_set_status(s->tapcfg, TAPCFG_STATUS_ALL_UP);
  free(ifname);
  free(ip);
  free(poll);
  *sess = s;
  return RC_OK;
}

static struct pad_s *find_pad(struct pad_s *pads, const char *name) {
  for (int i = 0; pads[i].name; i++)
    if (!strcmp(pads[i].name, name)) return &pads[i];
  return NULL;
}

static int innet_tap_add_pads(void *sess, struct pad_list_s *plist) {
  struct session_s *s = sess;
  if (!strcmp(plist->name, "sys_clk")) {
    struct pad_s *clk = find_pad(plist->pads, "sys_clk");
    s->sys_clk = clk ? (char *)clk->signal : NULL;
    return RC_OK;
  }
  struct pad_s *p = plist->pads;
  s->rx_valid = find_pad(p, "sink_valid");
  s->rx_data = find_pad(p, "sink_data");
  s->rx_last = find_pad(p, "sink_last");
  s->rx_last_be = find_pad(p, "sink_last_be");
  s->tx_valid = find_pad(p, "source_valid");
  s->tx_data = find_pad(p, "source_data");
  s->tx_last = find_pad(p, "source_last");
  s->tx_last_be = find_pad(p, "source_last_be");
  s->soc_ip_pad = find_pad(p, "soc_ip");
  s->soc_mac_pad = find_pad(p, "soc_mac");
  if (!s->rx_valid || !s->rx_data || !s->rx_last || !s->rx_last_be ||
      !s->tx_valid || !s->tx_data || !s->tx_last || !s->tx_last_be) {
    eprintf("innet_tap: interface %s lacks a stream pad\n", plist->name);
    return RC_INVARG;
  }
  s->width = s->rx_data->len / 8;
  if (s->width < 1 || s->width > 8 || s->tx_data->len != s->rx_data->len) {
    eprintf("innet_tap: data pads must be 8..64 bits wide and equal\n");
    return RC_INVARG;
  }
  return RC_OK;
}

static void transmit(struct session_s *s) {
  if (!pad_get(s->tx_valid)) return;
  uint64_t data = pad_get(s->tx_data);
  unsigned n = s->width;
  int last = pad_get(s->tx_last) != 0;
  if (last) {
    uint64_t be = pad_get(s->tx_last_be);
    for (n = 1; n < s->width && !((be >> (n - 1)) & 1); n++);
  }
  for (unsigned k = 0; k < n && s->tx_len < FRAME_MAX; k++) s->tx_buf[s->tx_len++] = data >> (8 * k);
  if (last) {
    tapcfg_write(s->tapcfg, s->tx_buf, s->tx_len);
    s->tx_len = 0;
  }
}

static void receive(struct session_s *s) {
  pad_set(s->rx_valid, 0);
  pad_set(s->rx_last, 0);
  pad_set(s->rx_last_be, 0);
  if (s->rx_pos >= s->rx_len) {
    if (s->countdown > 1) {
      s->countdown--;
      return;
    }
    s->countdown = s->poll;
    if (tapcfg_wait_readable(s->tapcfg, 0) <= 0) return;
    int n = tapcfg_read(s->tapcfg, s->rx_buf, FRAME_MAX);
    if (n <= 0) return;
    if (n < FRAME_MIN) {
      memset(s->rx_buf + n, 0, FRAME_MIN - n);
      n = FRAME_MIN;
    }
    s->rx_len = n;
    s->rx_pos = 0;
  }
  uint64_t data = 0;
  unsigned k;
  for (k = 0; k < s->width && s->rx_pos < s->rx_len; k++) data |= (uint64_t)s->rx_buf[s->rx_pos++] << (8 * k);
  pad_set(s->rx_valid, 1);
  pad_set(s->rx_data, data);
  if (s->rx_pos >= s->rx_len) {
    pad_set(s->rx_last, 1);
    pad_set(s->rx_last_be, 1ULL << (k - 1));
  }
}

static int innet_tap_tick(void *sess, uint64_t time_ps) {
  struct session_s *s = sess;
  (void)time_ps;
  if (!clk_pos_edge(&s->edge, *s->sys_clk)) return RC_OK;
  if (s->soc_ip_pad) pad_set(s->soc_ip_pad, s->soc_ip);
  if (s->soc_mac_pad) pad_set(s->soc_mac_pad, s->soc_mac);
  transmit(s);
  receive(s);
  return RC_OK;
}

static int innet_tap_close(void *sess) {
  struct session_s *s = sess;
  tapcfg_stop(s->tapcfg);
  tapcfg_destroy(s->tapcfg);
  free(s);
  return RC_OK;
}

static struct ext_module_s ext_mod = {
  "innet_tap",
  innet_tap_start,
  innet_tap_new,
  innet_tap_add_pads,
  innet_tap_close,
  innet_tap_tick
};

int litex_sim_ext_module_init(int (*register_module)(struct ext_module_s *)) {
  return register_module(&ext_mod);
}
