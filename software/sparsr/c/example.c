/* sparsr_example: sparsr.h from C against an innet SoC (a board, or litex_sim under sim.runner).
 *
 *     sparsr_example [IP[:PORT] [CSR_CSV [N_ROWS [SEED]]]]   (defaults: $INNET_SOC_IP, $INNET_CSR_CSV, 24, 1;
 *                                                           an empty argument takes its default)
 *
 * Writes N_ROWS random rows of mixed density into WMEM (compressed where sparsr_write_data_wmem takes the
 * row, raw otherwise), a batch through XMEM and the card's DMA, reads every row back and compares; then
 * checks the refusals: a row too dense for the compressed write (nothing sent), and a row past the end
 * of XMEM (dropped by the card). Prints one line per step and "ok"; exits 1 on any mismatch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sparsr.h"

static uint64_t state;

static uint32_t rnd(void)             /* xorshift64 */
{
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return (uint32_t)(state >> 16);
}

static void random_row(uint32_t *row, unsigned nonzero)
{
    memset(row, 0, 4 * SPARSR_ROW_LANES);
    for (unsigned placed = 0; placed < nonzero;) {
        unsigned lane = rnd() % SPARSR_ROW_LANES;
        if (!row[lane]) {
            row[lane] = rnd() | 1;
            placed++;
        }
    }
}

static int expect(int got, int want, const char *what, sparsr_dev *dev)
{
    if (got == want)
        return 0;
    fprintf(stderr, "%s: got %s, want %s (%s)\n", what, sparsr_strerror(got), sparsr_strerror(want),
            sparsr_last_error(dev));
    return 1;
}

int main(int argc, char **argv)
{
    char ip[64] = "";
    const char *target = argc > 1 && *argv[1] ? argv[1] : getenv("INNET_SOC_IP");
    const char *csv = argc > 2 && *argv[2] ? argv[2] : getenv("INNET_CSR_CSV");
    unsigned n = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 0) : 24;
    state = argc > 4 ? strtoull(argv[4], NULL, 0) : 1;
    state = state ? state : 1;
    unsigned port = 0;
    if (target) {
        snprintf(ip, sizeof ip, "%s", target);
        char *colon = strchr(ip, ':');
        if (colon) {
            *colon = 0;
            port = (unsigned)strtoul(colon + 1, NULL, 0);
        }
    }
    if (!*ip || !csv || !n) {
        fprintf(stderr, "usage: sparsr_example [IP[:PORT] [CSR_CSV [N_ROWS [SEED]]]] (or set INNET_SOC_IP "
                "and INNET_CSR_CSV)\n");
        return 2;
    }
    sparsr_dev *dev;
    int err = sparsr_open_etherbone(&dev, ip, port, csv, "sparsr", 60000);
    if (err) {
        fprintf(stderr, "error: %s\n", sparsr_last_error(NULL));
        return 1;
    }
    uint32_t wrows = sparsr_wmem_rows(dev), xrows = sparsr_xmem_rows(dev);
    printf("card at %s: wire protocol version %u, WMEM %u rows, XMEM %u rows\n", ip, sparsr_card_version(dev),
           wrows, xrows);
    static const unsigned densities[] = {0, 1, 8, 48, 49, 102, 103, 256};
    uint32_t *rows = calloc((size_t)wrows * SPARSR_ROW_LANES, 4);
    uint32_t *back = calloc((size_t)wrows * SPARSR_ROW_LANES, 4);
    if (!rows || !back) {
        fprintf(stderr, "error: out of memory\n");
        return 1;
    }
    unsigned failures = 0, done = 0, compressed = 0;
    uint64_t frames0 = sparsr_frames_sent(dev);
    while (done < n) {
        unsigned batch = n - done < wrows ? n - done : wrows;
        for (unsigned i = 0; i < batch; i++) {
            uint32_t *r = rows + (size_t)i * SPARSR_ROW_LANES;
            unsigned d = densities[rnd() % (sizeof densities / sizeof *densities)];
            random_row(r, d);
            /* the compressed write where it takes the row, the raw one otherwise */
            err = d <= SPARSR_WMEM_COMPRESSED_MAX_NONZERO ? sparsr_write_data_wmem(dev, i, r, 1)
                                                          : sparsr_write_data_wmem_raw(dev, i, r, 1);
            compressed += d <= SPARSR_WMEM_COMPRESSED_MAX_NONZERO;
            failures += expect(err, SPARSR_OK, "write", dev);
        }
        failures += expect(sparsr_read_data_wmem(dev, 0, back, batch), SPARSR_OK, "read", dev);
        failures += memcmp(rows, back, (size_t)batch * SPARSR_ROW_LANES * 4) != 0;
        done += batch;
    }
    printf("%u rows written (%u compressed) and read back in %llu frames\n", n, compressed,
           (unsigned long long)(sparsr_frames_sent(dev) - frames0));

    /* XMEM then the card's DMA into WMEM: LIL rows go through the card's one LIL decoder */
    unsigned batch = xrows < wrows ? xrows : wrows;
    for (unsigned i = 0; i < batch; i++)
        random_row(rows + (size_t)i * SPARSR_ROW_LANES, densities[i % (sizeof densities / sizeof *densities)]);
    failures += expect(sparsr_write_data_xmem(dev, 0, rows, batch), SPARSR_OK, "write xmem", dev);
    failures += expect(sparsr_dma_xmem_to_wmem(dev, 0, 0, batch), SPARSR_OK, "dma", dev);
    failures += expect(sparsr_read_data_wmem(dev, 0, back, batch), SPARSR_OK, "read after dma", dev);
    failures += memcmp(rows, back, (size_t)batch * SPARSR_ROW_LANES * 4) != 0;
    printf("%u rows through XMEM and the DMA\n", batch);

    /* refusals: a dense row for the compressed write (host side), a row past the end of XMEM (card side) */
    random_row(rows, SPARSR_WMEM_COMPRESSED_MAX_NONZERO + 1);
    uint64_t before = sparsr_frames_sent(dev);
    failures += expect(sparsr_write_data_wmem(dev, 0, rows, 1), SPARSR_EDENSE, "dense row", dev);
    failures += sparsr_frames_sent(dev) != before;
    printf("refused: %s\n", sparsr_last_error(dev));
    failures += expect(sparsr_write_data_xmem(dev, xrows, rows, 1), SPARSR_EROW, "row past XMEM", dev);
    printf("refused: %s\n", sparsr_last_error(dev));

    uint32_t counters[SPARSR_N_COUNTERS];
    failures += expect(sparsr_status(dev, counters), SPARSR_OK, "status", dev);
    for (unsigned i = 0; i < SPARSR_N_COUNTERS; i++)
        printf("%s %u\n", sparsr_counter_name(i), counters[i]);
    sparsr_close(dev);
    free(rows);
    free(back);
    printf(failures ? "FAILED: %u mismatches\n" : "ok\n", failures);
    return failures ? 1 : 0;
}
