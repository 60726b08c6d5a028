/* The Sparsr host library (sparsr.h): frames from rows, the exchange with the card, refusals as codes.
 * The packing is the one of software/sparsr/frames.py (tests compare the two frame for frame). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sparsr.h"
#include "internal.h"

struct sparsr_dev {
    sparsr_transport t;
    uint32_t wmem_rows, xmem_rows;
    uint32_t status[SPARSR_N_COUNTERS];
    uint32_t version;
    uint64_t frames_sent;
    char error[256];
};

static const char *const counter_names[SPARSR_N_COUNTERS] = SPARSR_COUNTER_NAMES;
static _Thread_local char open_error[256];

void sparsr_set_open_error(const char *msg)
{
    snprintf(open_error, sizeof open_error, "%s", msg);
}

static int fail(sparsr_dev *dev, int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dev->error, sizeof dev->error, fmt, ap);
    va_end(ap);
    return err;
}

/* Frames ------------------------------------------------------------------------------------------- */

static uint32_t tag(uint32_t kind, uint32_t count, uint32_t offset)
{
    return (kind << SPARSR_TAG_KIND_SHIFT) | (SPARSR_LANE_WIDTH_CODE << SPARSR_TAG_WIDTH_SHIFT)
         | (count << SPARSR_TAG_COUNT_SHIFT) | (offset << SPARSR_TAG_OFFSET_SHIFT);
}

static unsigned nonzero(const uint32_t *row)
{
    unsigned n = 0;
    for (unsigned i = 0; i < SPARSR_ROW_LANES; i++)
        n += row[i] != 0;
    return n;
}

static unsigned lil_words(unsigned n)
{
    return (n * SPARSR_LIL_ENTRY_BYTES + 3) / 4;
}

static int use_lil(const uint32_t *row)
{
    unsigned n = nonzero(row);
    return n <= SPARSR_LIL_MAX_ENTRIES && lil_words(n) < SPARSR_ROW_WORDS;
}

/* The frame being packed: its slots so far, sent when full. */
struct packer {
    sparsr_dev *dev;
    uint32_t frame[SPARSR_FRAME_WORDS];
    unsigned slots, used;
    int err;
};

static int send(sparsr_dev *dev, const uint32_t *frame)
{
    if (dev->t.send_frame(dev->t.ctx, frame) < 0)
        return fail(dev, SPARSR_EIO, "the transport failed to send a frame");
    dev->frames_sent++;
    return SPARSR_OK;
}

static void begin(struct packer *p, uint32_t cmd)
{
    memset(p->frame, 0, sizeof p->frame);
    p->frame[SPARSR_HDR_CMD] = cmd;
    p->slots = p->used = 0;
}

static void flush(struct packer *p)
{
    if (!p->slots || p->err)
        return;
    p->frame[SPARSR_HDR_LEN] = p->used;
    p->frame[SPARSR_HDR_ADDR] = p->slots;
    p->err = send(p->dev, p->frame);
    begin(p, p->frame[SPARSR_HDR_CMD]);
}

static uint32_t *slot(struct packer *p, unsigned words)
{
    uint32_t *s = p->frame + SPARSR_HEADER_WORDS + p->used;
    p->slots++;
    p->used += words;
    return s;
}

static void pack_lil(struct packer *p, uint32_t number, const uint32_t *row)
{
    unsigned n = nonzero(row), words = SPARSR_SLOT_HEADER_WORDS + lil_words(n);
    if (p->slots == SPARSR_MAX_SLOTS || p->used + words > SPARSR_PAYLOAD_WORDS)
        flush(p);
    uint32_t *s = slot(p, words);
    s[0] = tag(SPARSR_KIND_LIL, n, 0);
    s[1] = number;
    uint8_t *bytes = (uint8_t *)(s + SPARSR_SLOT_HEADER_WORDS);
    unsigned b = 0;
    for (unsigned lane = 0; lane < SPARSR_ROW_LANES; lane++) {
        if (!row[lane])
            continue;
        bytes[b++] = (uint8_t)lane;
        for (unsigned k = 0; k < 4; k++)
            bytes[b++] = (uint8_t)(row[lane] >> (8 * k));
    }
    /* bytes -> little-endian words, whatever the host's byte order */
    for (unsigned w = 0; w < lil_words(n); w++) {
        uint8_t *q = bytes + 4 * w;
        s[SPARSR_SLOT_HEADER_WORDS + w] = q[0] | q[1] << 8 | q[2] << 16 | (uint32_t)q[3] << 24;
    }
}

static void pack_raw(struct packer *p, uint32_t number, const uint32_t *row)
{
    unsigned offset = 0;
    while (offset < SPARSR_ROW_WORDS) {
        if (p->slots == SPARSR_MAX_SLOTS || SPARSR_PAYLOAD_WORDS - p->used < SPARSR_SLOT_HEADER_WORDS + 1)
            flush(p);
        unsigned count = SPARSR_PAYLOAD_WORDS - p->used - SPARSR_SLOT_HEADER_WORDS;
        if (count > SPARSR_ROW_WORDS - offset)
            count = SPARSR_ROW_WORDS - offset;
        uint32_t *s = slot(p, SPARSR_SLOT_HEADER_WORDS + count);
        s[0] = tag(SPARSR_KIND_RAW, count, offset);
        s[1] = number;
        memcpy(s + SPARSR_SLOT_HEADER_WORDS, row + offset, 4 * count);
        offset += count;
        if (offset < SPARSR_ROW_WORDS)
            flush(p);              /* an unfinished piece is the last slot of its frame */
    }
}

static void command(uint32_t *frame, uint32_t cmd, unsigned n, const uint32_t *params)
{
    memset(frame, 0, 4 * SPARSR_FRAME_WORDS);
    frame[SPARSR_HDR_CMD] = cmd;
    frame[SPARSR_HDR_LEN] = n;
    memcpy(frame + SPARSR_HEADER_WORDS, params, 4 * n);
}

/* Exchange ------------------------------------------------------------------------------------------ */

/* Rows being rebuilt from answer frames into out[] (raw pieces, contiguous). */
struct reader {
    uint32_t first, n, done, offset;
    uint32_t *out;
};

static int take_rows(sparsr_dev *dev, struct reader *r, const uint32_t *f)
{
    unsigned pos = SPARSR_HEADER_WORDS, slots = 0;
    while (pos < SPARSR_FRAME_WORDS) {
        uint32_t t = f[pos];
        uint32_t kind = (t >> SPARSR_TAG_KIND_SHIFT) & SPARSR_TAG_KIND_MASK;
        if (kind == SPARSR_KIND_END)
            break;
        uint32_t count = (t >> SPARSR_TAG_COUNT_SHIFT) & SPARSR_TAG_COUNT_MASK;
        uint32_t offset = (t >> SPARSR_TAG_OFFSET_SHIFT) & SPARSR_TAG_OFFSET_MASK;
        if (kind != SPARSR_KIND_RAW || pos + SPARSR_SLOT_HEADER_WORDS + count > SPARSR_FRAME_WORDS)
            return fail(dev, SPARSR_EANSWER, "answer slot at word %u is not a raw piece", pos);
        if (r->done == r->n || f[pos + 1] != r->first + r->done || offset != r->offset
            || offset + count > SPARSR_ROW_WORDS)
            return fail(dev, SPARSR_EANSWER, "answer piece of row %u at offset %u does not continue row %u",
                        f[pos + 1], offset, r->first + r->done);
        memcpy(r->out + (size_t)r->done * SPARSR_ROW_LANES + offset, f + pos + SPARSR_SLOT_HEADER_WORDS,
               4 * count);
        r->offset += count;
        if (r->offset == SPARSR_ROW_WORDS) {
            r->done++;
            r->offset = 0;
        }
        pos += SPARSR_SLOT_HEADER_WORDS + count;
        slots++;
    }
    if (f[SPARSR_HDR_LEN] != pos - SPARSR_HEADER_WORDS || f[SPARSR_HDR_ADDR] != slots)
        return fail(dev, SPARSR_EANSWER, "answer header LEN=%u ADDR=%u disagrees with its slots",
                    f[SPARSR_HDR_LEN], f[SPARSR_HDR_ADDR]);
    return SPARSR_OK;
}

/* Sends STATUS and reads answers up to its answer; rows answers go to `r` (NULL: none expected). Then
 * compares the counters with the last status: a refusal counted meanwhile is the call's error. */
static int finish(sparsr_dev *dev, struct reader *r)
{
    uint32_t f[SPARSR_FRAME_WORDS];
    int err;
    command(f, SPARSR_CMD_STATUS, 0, NULL);
    if ((err = send(dev, f)))
        return err;
    for (;;) {
        if (dev->t.recv_frame(dev->t.ctx, f) < 0)
            return fail(dev, SPARSR_EIO, "no answer frame from the card");
        if (f[SPARSR_HDR_CMD] == SPARSR_CMD_ANSWER_STATUS)
            break;
        if (f[SPARSR_HDR_CMD] != SPARSR_CMD_ANSWER_ROWS || !r)
            return fail(dev, SPARSR_EANSWER, "unexpected answer CMD 0x%x", f[SPARSR_HDR_CMD]);
        if ((err = take_rows(dev, r, f)))
            return err;
    }
    if (f[SPARSR_HDR_LEN] != SPARSR_N_COUNTERS)
        return fail(dev, SPARSR_EANSWER, "status answer with LEN=%u", f[SPARSR_HDR_LEN]);
    dev->version = f[SPARSR_HDR_ADDR];
    if (dev->version != SPARSR_WIRE_VERSION)
        return fail(dev, SPARSR_EVERSION, "the card speaks wire protocol version %u; this host speaks %u",
                    dev->version, SPARSR_WIRE_VERSION);
    uint32_t delta[SPARSR_N_COUNTERS];
    for (unsigned i = 0; i < SPARSR_N_COUNTERS; i++) {
        delta[i] = f[SPARSR_HEADER_WORDS + i] - dev->status[i];
        dev->status[i] = f[SPARSR_HEADER_WORDS + i];
    }
    char reasons[200] = "";
    for (unsigned i = SPARSR_FIRST_REFUSED; i < SPARSR_FIRST_REFUSED + SPARSR_N_REASONS; i++)
        if (delta[i])
            snprintf(reasons + strlen(reasons), sizeof reasons - strlen(reasons), "%s%s x%u",
                     *reasons ? ", " : "", counter_names[i] + sizeof "refused_" - 1, delta[i]);
    if (*reasons)
        return fail(dev, SPARSR_EREFUSED, "card refused frames: %s", reasons);
    if (delta[SPARSR_SLOTS_REFUSED_ROW])
        return fail(dev, SPARSR_EROW, "card refused %u slot(s): row number past the end of the memory",
                    delta[SPARSR_SLOTS_REFUSED_ROW]);
    if (r && r->done != r->n)
        return fail(dev, SPARSR_EANSWER, "read of %u rows answered %u", r->n, r->done);
    return SPARSR_OK;
}

/* API ------------------------------------------------------------------------------------------------ */

enum form { FORM_ESCAPE, FORM_LIL, FORM_RAW };

static int write_rows(sparsr_dev *dev, uint32_t cmd, uint32_t row, const uint32_t *rows, uint32_t n_rows,
                      enum form form)
{
    if (!dev)
        return SPARSR_EINVAL;
    if (!rows && n_rows)
        return fail(dev, SPARSR_EINVAL, "rows is NULL");
    if (form == FORM_LIL)
        for (uint32_t i = 0; i < n_rows; i++) {
            unsigned n = nonzero(rows + (size_t)i * SPARSR_ROW_LANES);
            if (n > SPARSR_WMEM_COMPRESSED_MAX_NONZERO)
                return fail(dev, SPARSR_EDENSE, "row %u has %u non-zero lanes: the compressed write takes at "
                            "most %u (use sparsr_write_data_wmem_raw)", row + i, n,
                            SPARSR_WMEM_COMPRESSED_MAX_NONZERO);
        }
    struct packer p = {.dev = dev};
    begin(&p, cmd);
    for (uint32_t i = 0; i < n_rows && !p.err; i++) {
        const uint32_t *r = rows + (size_t)i * SPARSR_ROW_LANES;
        if (form == FORM_LIL || (form == FORM_ESCAPE && use_lil(r)))
            pack_lil(&p, row + i, r);
        else
            pack_raw(&p, row + i, r);
    }
    flush(&p);
    return p.err ? p.err : finish(dev, NULL);
}

int sparsr_write_data_wmem(sparsr_dev *dev, uint32_t row, const uint32_t *rows, uint32_t n_rows)
{
    return write_rows(dev, SPARSR_CMD_WRITE_WMEM, row, rows, n_rows, FORM_LIL);
}

int sparsr_write_data_wmem_raw(sparsr_dev *dev, uint32_t row, const uint32_t *rows, uint32_t n_rows)
{
    return write_rows(dev, SPARSR_CMD_WRITE_WMEM, row, rows, n_rows, FORM_RAW);
}

int sparsr_write_data_xmem(sparsr_dev *dev, uint32_t row, const uint32_t *rows, uint32_t n_rows)
{
    return write_rows(dev, SPARSR_CMD_WRITE_XMEM, row, rows, n_rows, FORM_ESCAPE);
}

int sparsr_read_data_wmem(sparsr_dev *dev, uint32_t row, uint32_t *rows, uint32_t n_rows)
{
    if (!dev)
        return SPARSR_EINVAL;
    if (!rows || !n_rows || row >= dev->wmem_rows || n_rows > dev->wmem_rows - row)
        return fail(dev, SPARSR_EINVAL, "read of %u rows from row %u: WMEM has %u rows", n_rows, row,
                    dev->wmem_rows);
    uint32_t f[SPARSR_FRAME_WORDS], params[2] = {row, n_rows};
    struct reader r = {.first = row, .n = n_rows, .out = rows};
    int err;
    command(f, SPARSR_CMD_READ_WMEM, 2, params);
    return (err = send(dev, f)) ? err : finish(dev, &r);
}

int sparsr_dma_xmem_to_wmem(sparsr_dev *dev, uint32_t xmem_row, uint32_t wmem_row, uint32_t n_rows)
{
    if (!dev)
        return SPARSR_EINVAL;
    uint32_t f[SPARSR_FRAME_WORDS], params[3] = {xmem_row, wmem_row, n_rows};
    int err;
    command(f, SPARSR_CMD_DMA_XMEM_WMEM, 3, params);
    return (err = send(dev, f)) ? err : finish(dev, NULL);
}

int sparsr_status(sparsr_dev *dev, uint32_t counters[SPARSR_N_COUNTERS])
{
    if (!dev || !counters)
        return SPARSR_EINVAL;
    int err = finish(dev, NULL);
    memcpy(counters, dev->status, sizeof dev->status);
    return err;
}

int sparsr_open(sparsr_dev **devp, const sparsr_transport *t, uint32_t wmem_rows, uint32_t xmem_rows)
{
    if (!devp)
        return SPARSR_EINVAL;
    *devp = NULL;
    if (!t || !t->send_frame || !t->recv_frame) {
        sparsr_set_open_error("a transport needs send_frame and recv_frame");
        return SPARSR_EINVAL;
    }
    if (!wmem_rows || !xmem_rows || wmem_rows > SPARSR_MAX_ROWS || xmem_rows > SPARSR_MAX_ROWS) {
        snprintf(open_error, sizeof open_error, "memories of %u and %u rows: each takes 1..%u", wmem_rows,
                 xmem_rows, SPARSR_MAX_ROWS);
        return SPARSR_EINVAL;
    }
    sparsr_dev *dev = calloc(1, sizeof *dev);
    if (!dev) {
        sparsr_set_open_error("out of memory");
        return SPARSR_ENOMEM;
    }
    dev->t = *t;
    dev->wmem_rows = wmem_rows;
    dev->xmem_rows = xmem_rows;
    /* The first status only sets the baseline of the counters: earlier refusals are not this host's. */
    int err = finish(dev, NULL);
    if (err == SPARSR_EREFUSED || err == SPARSR_EROW)
        err = SPARSR_OK;
    if (err) {
        sparsr_set_open_error(dev->error);
        free(dev);
        return err;
    }
    *devp = dev;
    return SPARSR_OK;
}

void sparsr_close(sparsr_dev *dev)
{
    if (!dev)
        return;
    if (dev->t.close)
        dev->t.close(dev->t.ctx);
    free(dev);
}

uint32_t sparsr_wmem_rows(const sparsr_dev *dev) { return dev->wmem_rows; }
uint32_t sparsr_xmem_rows(const sparsr_dev *dev) { return dev->xmem_rows; }
uint32_t sparsr_card_version(const sparsr_dev *dev) { return dev->version; }
uint64_t sparsr_frames_sent(const sparsr_dev *dev) { return dev->frames_sent; }
const char *sparsr_last_error(const sparsr_dev *dev) { return dev ? dev->error : open_error; }

const char *sparsr_counter_name(unsigned i)
{
    return i < SPARSR_N_COUNTERS ? counter_names[i] : NULL;
}

const char *sparsr_strerror(int err)
{
    switch (err) {
    case SPARSR_OK: return "ok";
    case SPARSR_EINVAL: return "invalid argument";
    case SPARSR_EDENSE: return "row too dense for the compressed write";
    case SPARSR_EREFUSED: return "the card refused frames";
    case SPARSR_EROW: return "row number past the end of the memory";
    case SPARSR_EIO: return "transport failure";
    case SPARSR_EVERSION: return "wire protocol version mismatch";
    case SPARSR_EANSWER: return "malformed answer from the card";
    case SPARSR_ENOMEM: return "out of memory";
    default: return "unknown error";
    }
}
