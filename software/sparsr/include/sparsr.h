/* sparsr.h: the Sparsr host library (wire protocol version 3).
 *
 * The program calls these functions; the library builds the frames (LIL or raw slots, the raw escape, raw
 * rows in pieces), sends them to the card, and maps the card's refusals to error codes. Every call that
 * sends frames ends with a STATUS frame and reads the answers up to the status answer, so a refusal is
 * reported by the call that caused it.
 *
 * A row is SPARSR_ROW_LANES 32-bit lanes. The card is reached through a transport: two callbacks that move
 * one SPARSR_FRAME_WORDS-word frame each way (sparsr_open), or the built-in Etherbone transport to an innet
 * SoC over UDP (sparsr_open_etherbone). Functions return SPARSR_OK (0) or a negative SPARSR_E* code;
 * sparsr_last_error(dev) gives a one-line message for the last failure on a card, sparsr_last_error(NULL)
 * the reason the calling thread's last open failed.
 *
 * The ABI constants (command values, tag fields, counters) are generated from cores/sparsr/common.py into
 * sparsr_abi.h when the library is built (python -m software.sparsr.capi build); nothing is repeated here.
 */
#ifndef SPARSR_H
#define SPARSR_H

#include <stdint.h>
#include "sparsr_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

enum sparsr_error {
    SPARSR_OK = 0,
    SPARSR_EINVAL = -1,     /* a bad argument; nothing was sent */
    SPARSR_EDENSE = -2,     /* sparsr_write_data_wmem: a row with more than SPARSR_WMEM_COMPRESSED_MAX_NONZERO
                               non-zero lanes; nothing was sent */
    SPARSR_EREFUSED = -3,   /* the card refused whole frames (the reasons are in sparsr_last_error) */
    SPARSR_EROW = -4,       /* the card dropped slots whose row number is past the end of the memory */
    SPARSR_EIO = -5,        /* the transport failed or timed out */
    SPARSR_EVERSION = -6,   /* the card speaks another wire protocol version */
    SPARSR_EANSWER = -7,    /* an answer frame that does not follow the format */
    SPARSR_ENOMEM = -8,
};

/* Moves one frame of SPARSR_FRAME_WORDS words; returns 0, or a negative value on failure (-> SPARSR_EIO). */
typedef struct sparsr_transport {
    void *ctx;
    int (*send_frame)(void *ctx, const uint32_t *words);
    int (*recv_frame)(void *ctx, uint32_t *words);
    void (*close)(void *ctx);           /* may be NULL; called by sparsr_close */
} sparsr_transport;

typedef struct sparsr_dev sparsr_dev;

/* Opens a card of wmem_rows x xmem_rows rows behind `t` (copied). Reads the card's status and checks its
 * wire protocol version (SPARSR_EVERSION). On failure *dev is NULL and `t->close` has not been called. */
int sparsr_open(sparsr_dev **dev, const sparsr_transport *t, uint32_t wmem_rows, uint32_t xmem_rows);

/* Opens the Sparsr block `block` (its CSR prefix, e.g. "sparsr") of an innet SoC at `ip` over Etherbone
 * (UDP `port`, bound locally too; 0 means SPARSR_ETHERBONE_PORT), with the addresses from the SoC's
 * csr.csv. The memory sizes are read from the block's config CSR. timeout_ms bounds every wait for the card. */
int sparsr_open_etherbone(sparsr_dev **dev, const char *ip, unsigned port, const char *csr_csv,
                          const char *block, unsigned timeout_ms);

void sparsr_close(sparsr_dev *dev);

uint32_t sparsr_wmem_rows(const sparsr_dev *dev);
uint32_t sparsr_xmem_rows(const sparsr_dev *dev);

/* Stores n_rows rows (n_rows * SPARSR_ROW_LANES lanes, row after row) at WMEM rows row, row+1, ... as LIL
 * slots. Refuses (SPARSR_EDENSE) if any row has more than SPARSR_WMEM_COMPRESSED_MAX_NONZERO non-zero lanes. */
int sparsr_write_data_wmem(sparsr_dev *dev, uint32_t row, const uint32_t *rows, uint32_t n_rows);

/* Stores rows of any density at WMEM rows row, row+1, ...: every row raw, in pieces. */
int sparsr_write_data_wmem_raw(sparsr_dev *dev, uint32_t row, const uint32_t *rows, uint32_t n_rows);

/* Stores rows in XMEM as sent: LIL where the raw escape allows it, raw otherwise. */
int sparsr_write_data_xmem(sparsr_dev *dev, uint32_t row, const uint32_t *rows, uint32_t n_rows);

/* Reads WMEM rows row .. row+n_rows-1 into `rows` (n_rows * SPARSR_ROW_LANES lanes). */
int sparsr_read_data_wmem(sparsr_dev *dev, uint32_t row, uint32_t *rows, uint32_t n_rows);

/* Copies n_rows XMEM rows into WMEM on the card; LIL rows go through the card's LIL decoder. */
int sparsr_dma_xmem_to_wmem(sparsr_dev *dev, uint32_t xmem_row, uint32_t wmem_row, uint32_t n_rows);

/* The card's counters, in SPARSR_STATUS_COUNTERS order (names: sparsr_counter_name). */
int sparsr_status(sparsr_dev *dev, uint32_t counters[SPARSR_N_COUNTERS]);
const char *sparsr_counter_name(unsigned i);

/* The version the card announced in its status answer (SPARSR_WIRE_VERSION once open). */
uint32_t sparsr_card_version(const sparsr_dev *dev);

/* Frames sent since open (status frames included). */
uint64_t sparsr_frames_sent(const sparsr_dev *dev);

const char *sparsr_strerror(int err);
const char *sparsr_last_error(const sparsr_dev *dev);

#ifdef __cplusplus
}
#endif

#endif
