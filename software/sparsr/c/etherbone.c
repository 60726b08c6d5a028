/* sparsr_open_etherbone: the Sparsr SoC block of an innet SoC over Etherbone/UDP, as
 * software/sparsr/links.py's EtherboneLink does it: a frame is written into the block's TX buffer and
 * started with tx_go; an answer is read from the RX buffer when status.rx_valid is set, then rx_pop.
 *
 * Etherbone (the LiteX flavour): an 8-byte packet header (magic, version, 32-bit address and port sizes),
 * then one record: 4 header bytes (flags, byte enable, write count, read count), then big-endian words.
 * A read record's first word is the address its answer is written back to: the request's tag. Writes
 * are acknowledged as software/client.py does: each write record is followed by a read that must be
 * answered before the next record leaves, and only reads are resent. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "sparsr.h"
#include "internal.h"

#define EB_MAGIC 0x4e6f
#define EB_VERSION 1
#define EB_SIZES 0x44           /* 32-bit addresses and ports */
#define EB_BYTE_ENABLE 0x0f
#define EB_RESENDS 4            /* read tries within one timeout */

struct eb {
    int fd;
    struct sockaddr_in peer;
    unsigned timeout_ms;
    uint32_t tag;
    uint32_t mem_base, tx_go, rx_pop, status, config, ack;
};

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v;
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

static size_t header(uint8_t *b, unsigned wcount, unsigned rcount)
{
    b[0] = EB_MAGIC >> 8; b[1] = EB_MAGIC & 0xff; b[2] = EB_VERSION << 4; b[3] = EB_SIZES;
    memset(b + 4, 0, 4);
    b[8] = 0; b[9] = EB_BYTE_ENABLE; b[10] = wcount; b[11] = rcount;
    return 12;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* One read record of n words at addr (n <= SPARSR_ETHERBONE_BURST), resent until answered. */
static int eb_read(struct eb *eb, uint32_t addr, unsigned n, uint32_t *out)
{
    uint8_t req[12 + 4 * (1 + SPARSR_ETHERBONE_BURST)], ans[1500];
    long long deadline = now_ms() + eb->timeout_ms;
    while (now_ms() < deadline) {
        uint32_t tag = ++eb->tag;
        size_t len = header(req, 0, n);
        put32(req + len, tag);
        len += 4;
        for (unsigned i = 0; i < n; i++, len += 4)
            put32(req + len, addr + 4 * i);
        if (sendto(eb->fd, req, len, 0, (struct sockaddr *)&eb->peer, sizeof eb->peer) < 0)
            return -1;
        long long retry = now_ms() + eb->timeout_ms / EB_RESENDS + 1;
        for (;;) {
            long long left = retry - now_ms();
            struct pollfd pfd = {.fd = eb->fd, .events = POLLIN};
            if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
                break;
            ssize_t got = recv(eb->fd, ans, sizeof ans, 0);
            /* an answer is a write record of n words to `tag`; anything else (late answers) is skipped */
            if (got == (ssize_t)(16 + 4 * n) && get32(ans) >> 16 == EB_MAGIC && ans[10] == n
                && get32(ans + 12) == tag) {
                for (unsigned i = 0; i < n; i++)
                    out[i] = get32(ans + 16 + 4 * i);
                return 0;
            }
        }
    }
    return -1;
}

static int eb_write(struct eb *eb, uint32_t addr, unsigned n, const uint32_t *words)
{
    uint8_t req[12 + 4 * (1 + SPARSR_ETHERBONE_BURST)];
    uint32_t ack;
    size_t len = header(req, n, 0);
    put32(req + len, addr);
    len += 4;
    for (unsigned i = 0; i < n; i++, len += 4)
        put32(req + len, words[i]);
    if (sendto(eb->fd, req, len, 0, (struct sockaddr *)&eb->peer, sizeof eb->peer) < 0)
        return -1;
    return eb_read(eb, eb->ack, 1, &ack);
}

static int wait_status(struct eb *eb, uint32_t mask, uint32_t value)
{
    long long deadline = now_ms() + eb->timeout_ms;
    uint32_t s;
    do {
        if (eb_read(eb, eb->status, 1, &s))
            return -1;
        if ((s & mask) == value)
            return 0;
    } while (now_ms() < deadline);
    return -1;
}

static int eb_send_frame(void *ctx, const uint32_t *words)
{
    struct eb *eb = ctx;
    uint32_t go = 1;
    if (wait_status(eb, SPARSR_STATUS_TX_BUSY, 0))
        return -1;
    for (unsigned i = 0; i < SPARSR_FRAME_WORDS; i += SPARSR_ETHERBONE_BURST)
        if (eb_write(eb, eb->mem_base + 4 * (SPARSR_TX_OFFSET + i), SPARSR_ETHERBONE_BURST, words + i))
            return -1;
    return eb_write(eb, eb->tx_go, 1, &go);
}

static int eb_recv_frame(void *ctx, uint32_t *words)
{
    struct eb *eb = ctx;
    uint32_t pop = 1;
    if (wait_status(eb, SPARSR_STATUS_RX_VALID, SPARSR_STATUS_RX_VALID))
        return -1;
    for (unsigned i = 0; i < SPARSR_FRAME_WORDS; i += SPARSR_ETHERBONE_BURST)
        if (eb_read(eb, eb->mem_base + 4 * (SPARSR_RX_OFFSET + i), SPARSR_ETHERBONE_BURST, words + i))
            return -1;
    return eb_write(eb, eb->rx_pop, 1, &pop);
}

static void eb_close(void *ctx)
{
    struct eb *eb = ctx;
    close(eb->fd);
    free(eb);
}

/* csr.csv rows: "csr_register,<name>,0x<addr>,..", "memory_region,<name>,0x<addr>,..",
 * "csr_base,<name>,0x<addr>,..". Returns 0 when every wanted name was found. */
static int read_csr_csv(const char *path, const char *block, struct eb *eb, char *why, size_t whylen)
{
    struct { const char *kind, *suffix; uint32_t *addr; int found; } want[] = {
        {"memory_region", "", &eb->mem_base, 0}, {"csr_register", "_tx_go", &eb->tx_go, 0},
        {"csr_register", "_rx_pop", &eb->rx_pop, 0}, {"csr_register", "_status", &eb->status, 0},
        {"csr_register", "_config", &eb->config, 0}, {"csr_base", "identifier_mem", &eb->ack, 0},
    };
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(why, whylen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    char line[512], name[256];
    while (fgets(line, sizeof line, f)) {
        char *kind = strtok(line, ","), *n = strtok(NULL, ","), *a = strtok(NULL, ",");
        if (!kind || !n || !a)
            continue;
        for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
            if (!strcmp(want[i].kind, "csr_base"))
                snprintf(name, sizeof name, "%s", want[i].suffix);
            else
                snprintf(name, sizeof name, "%s%s", block, want[i].suffix);
            if (!strcmp(kind, want[i].kind) && !strcmp(n, name)) {
                *want[i].addr = (uint32_t)strtoul(a, NULL, 0);
                want[i].found = 1;
            }
        }
    }
    fclose(f);
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        if (!want[i].found) {
            snprintf(why, whylen, "%s has no %s %s%s", path, want[i].kind,
                     strcmp(want[i].kind, "csr_base") ? block : "", want[i].suffix);
            return -1;
        }
    return 0;
}

int sparsr_open_etherbone(sparsr_dev **dev, const char *ip, unsigned port, const char *csr_csv,
                          const char *block, unsigned timeout_ms)
{
    char why[512];
    if (!dev || !ip || !csr_csv || !block || !timeout_ms || port > 65535) {
        sparsr_set_open_error("sparsr_open_etherbone: a NULL argument, a zero timeout or a bad port");
        return SPARSR_EINVAL;
    }
    port = port ? port : SPARSR_ETHERBONE_PORT;
    *dev = NULL;
    struct eb *eb = calloc(1, sizeof *eb);
    if (!eb)
        return SPARSR_ENOMEM;
    eb->timeout_ms = timeout_ms;
    eb->fd = -1;
    eb->peer.sin_family = AF_INET;
    eb->peer.sin_port = htons(port);
    int err = SPARSR_EINVAL;
    if (inet_pton(AF_INET, ip, &eb->peer.sin_addr) != 1) {
        snprintf(why, sizeof why, "not an IPv4 address: %s", ip);
        goto out;
    }
    if (read_csr_csv(csr_csv, block, eb, why, sizeof why))
        goto out;
    err = SPARSR_EIO;
    struct sockaddr_in local = {.sin_family = AF_INET, .sin_port = htons(port)};
    int one = 1;
    if ((eb->fd = socket(AF_INET, SOCK_DGRAM, 0)) < 0
        || setsockopt(eb->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0
        || bind(eb->fd, (struct sockaddr *)&local, sizeof local) < 0) {
        snprintf(why, sizeof why, "cannot bind UDP port %u: %s", port, strerror(errno));
        goto out;
    }
    uint32_t config;
    if (eb_read(eb, eb->config, 1, &config)) {
        snprintf(why, sizeof why, "no Etherbone answer from %s:%u within %u ms", ip, port, timeout_ms);
        goto out;
    }
    sparsr_transport t = {.ctx = eb, .send_frame = eb_send_frame, .recv_frame = eb_recv_frame,
                          .close = eb_close};
    err = sparsr_open(dev, &t, config & SPARSR_CONFIG_ROWS_MASK, config >> SPARSR_CONFIG_XMEM_SHIFT);
    if (!err)
        return SPARSR_OK;
    snprintf(why, sizeof why, "%s", sparsr_last_error(NULL));
out:
    sparsr_set_open_error(why);
    if (eb->fd >= 0)
        close(eb->fd);
    free(eb);
    return err;
}
